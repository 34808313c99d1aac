package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree writes files (content, or "->target" for a link) under a fresh folder.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(strings.ReplaceAll(target, "$DIR", dir), p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRootIsTheRepository: the root is the nearest folder with a .git folder or file above
// the folder given, else that folder.
func TestRootIsTheRepository(t *testing.T) {
	dir := tree(t, map[string]string{"repo/.git/HEAD": "x", "repo/a/b/compose.yaml": "", "wt/.git": "gitdir: x", "wt/c/compose.yaml": "", "plain/compose.yaml": ""})
	for given, want := range map[string]string{"repo/a/b": "repo", "wt/c": "wt", "plain": "plain"} {
		r := NewRoot(filepath.Join(dir, given))
		if got := r.Dirs(); len(got) != 1 || got[0] != filepath.Join(dir, want) {
			t.Errorf("root of %s is %v, want %s", given, got, want)
		}
	}
}

// TestResolve follows names as the kernel does and says whether they stay in the root.
func TestResolve(t *testing.T) {
	dir := tree(t, map[string]string{
		"outside/secret":  "root:x:0:0",
		"p/compose.yaml":  "services: {}",
		"p/in":            "->compose.yaml",
		"p/abs-in":        "->$DIR/p/compose.yaml",
		"p/out":           "->../outside/secret",
		"p/abs-out":       "->$DIR/outside/secret",
		"p/sub/hop":       "->../out",
		"p/dirlink":       "->../outside",
		"p/loop":          "->loop",
		"p/sub/file.yaml": "x",
	})
	r := NewRoot(filepath.Join(dir, "p"))
	for name, inside := range map[string]bool{
		"p/compose.yaml": true, "p/in": true, "p/abs-in": true, "p/sub/file.yaml": true,
		"p/missing.yaml": true, "p/sub/../compose.yaml": true,
		"p/out": false, "p/abs-out": false, "p/sub/hop": false, "p/dirlink/secret": false,
		"p/../outside/secret": false, "p/loop": false, "p/missing/../../outside/secret": false,
	} {
		if _, got := r.Resolve(filepath.Join(dir, name)); got != inside {
			t.Errorf("%s: inside %v, want %v", name, got, inside)
		}
	}
	wide := NewRoot(filepath.Join(dir, "p"), filepath.Join(dir, "outside"))
	if _, in := wide.Resolve(filepath.Join(dir, "p/out")); !in {
		t.Errorf("--allow-outside did not widen the root")
	}
}

// TestReadConfined reads through a confined view: a link out of the root is refused and its
// content never returned; a view allowed more reads it from the same cache.
func TestReadConfined(t *testing.T) {
	dir := tree(t, map[string]string{"outside/secret": "root:x:0:0", "p/out": "->../outside/secret", "p/ok": "services: {}"})
	s := NewSources()
	narrow := s.Within(NewRoot(filepath.Join(dir, "p")))
	if b, err := narrow.Read(filepath.Join(dir, "p/ok"), false); err != nil || string(b) != "services: {}" {
		t.Fatalf("inside: %q, %v", b, err)
	}
	b, err := narrow.Read(filepath.Join(dir, "p/out"), false)
	var oe *OutsideError
	if !errors.As(err, &oe) || b != nil {
		t.Fatalf("outside: %q, %v", b, err)
	}
	if strings.Contains(err.Error(), "root:x") {
		t.Errorf("the error quotes the file: %v", err)
	}
	wide := s.Within(NewRoot(filepath.Join(dir, "p"), filepath.Join(dir, "outside")))
	if b, err := wide.Read(filepath.Join(dir, "p/out"), false); err != nil || string(b) != "root:x:0:0" {
		t.Errorf("allowed: %q, %v", b, err)
	}
	if _, err := narrow.Read(filepath.Join(dir, "p/out"), false); !IsOutside(err) {
		t.Errorf("the narrow view reads what the wide one read: %v", err)
	}
}

// TestReadChecksTheDescriptor swaps the file for a link out of the root after it was checked
// by name and before it is opened: the check on the opened descriptor refuses it.
func TestReadChecksTheDescriptor(t *testing.T) {
	dir := tree(t, map[string]string{"outside/secret": "root:x:0:0", "p/compose.yaml": "services: {}"})
	file := filepath.Join(dir, "p/compose.yaml")
	betweenCheckAndOpen = func(string) {
		_ = os.Remove(file)
		_ = os.Symlink(filepath.Join(dir, "outside/secret"), file)
	}
	defer func() { betweenCheckAndOpen = nil }()
	b, err := NewSources().Within(NewRoot(filepath.Join(dir, "p"))).Read(file, false)
	if !IsOutside(err) || b != nil {
		t.Errorf("a file swapped after the check was read: %q, %v", b, err)
	}
}

// TestRootThroughTheUsersLink: a checkout reached through a link of the user's own (alias ->
// real), as the working folder names it, reads its files; a link inside it that leads out
// is still refused.
func TestRootThroughTheUsersLink(t *testing.T) {
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "real", "proj", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(base, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../elsewhere", filepath.Join(base, "real", "proj", "out")); err != nil {
		t.Fatal(err)
	}
	r := NewRoot(filepath.Join(base, "alias", "proj"))
	if real, inside := r.Resolve(filepath.Join(base, "alias", "proj", "compose.yaml")); !inside || real != filepath.Join(base, "real", "proj", "compose.yaml") {
		t.Errorf("the checkout's own file: %s, inside %v", real, inside)
	}
	if _, inside := r.Resolve(filepath.Join(base, "alias", "proj", "out", "x")); inside {
		t.Error("a link out of the checkout was followed")
	}
	if _, inside := r.Resolve(filepath.Join(base, "alias", "other")); inside {
		t.Error("a sibling of the checkout is inside its root")
	}
}
