//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/moby/moby/client"
)

// commitTime is the fixed author and committer date of the test checkouts.
const commitTime = "2025-01-02T03:04:05+00:00"

// checkout copies the module's files (tracked and untracked, not ignored) to dir and commits
// them with a fixed date and tag: a clean clone at release tag v9.8.7, the same commit in
// every folder.
func checkout(t *testing.T, dir string) {
	t.Helper()
	checkoutTag(t, dir, "v9.8.7")
}

// checkoutTag is checkout with the tag given, or none when tag is "", and returns the commit.
func checkoutTag(t *testing.T, dir, tag string) string {
	t.Helper()
	src := root(t)
	for _, name := range checkoutFiles(t, src) {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(filepath.Join(src, name))
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"GIT_AUTHOR_DATE=" + commitTime, "GIT_COMMITTER_DATE=" + commitTime,
		"GIT_AUTHOR_NAME=release", "GIT_AUTHOR_EMAIL=release@example.com",
		"GIT_COMMITTER_NAME=release", "GIT_COMMITTER_EMAIL=release@example.com", "GIT_CONFIG_GLOBAL=/dev/null"}
	cmds := [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "release"}}
	if tag != "" {
		cmds = append(cmds, []string{"tag", tag})
	}
	for _, args := range cmds {
		if r := runIn(t, dir, env, "git", args...); r.code != 0 {
			t.Fatalf("git %v: %s", args, r.stderr)
		}
	}
	return strings.TrimSpace(runIn(t, dir, nil, "git", "rev-parse", "HEAD").stdout)
}

// checkoutFiles lists the files of the checkout at src as git sees them, tracked and untracked
// but not ignored, without those deleted and not yet committed.
func checkoutFiles(t *testing.T, src string) []string {
	t.Helper()
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = src
	out, err := ls.Output()
	if err != nil {
		t.Fatalf("git ls-files (the test needs a git checkout): %v", err)
	}
	var names []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if _, err := os.Stat(filepath.Join(src, name)); err == nil {
			names = append(names, name)
		}
	}
	return names
}

// TestRelease runs `make release` for the host's platform in two checkouts of the same commit
// in different folders, as a release on a clean clone does:
//   - both give the same SHA256SUMS, which match the files, and no build path is in the binary
//     (-trimpath, no timestamps). The second build reuses the Go build cache, which is keyed
//     by content: the comparison proves that everything the release feeds the compiler (paths,
//     ldflags, the compressed agents) is the same; the compiler's own determinism is Go's.
//   - `version` reports the tag, the commit and its time, and the embedded agent;
//   - with SHMDOCTOR_PROBE_AGENT=embedded, `host` probes the real daemon with the embedded
//     agent (on macOS and Windows, where the binary cannot be its own agent, this is the path
//     every probe takes): its image, tagged by the agent's digest, is the one used.
func TestRelease(t *testing.T) {
	platform := "linux/" + runtime.GOARCH
	tmp := t.TempDir()
	var sums [2][]byte
	var dirs [2]string
	for i, name := range []string{"a", "checkout-in-a-longer-folder"} {
		dirs[i] = filepath.Join(tmp, name)
		checkout(t, dirs[i])
		r := runIn(t, dirs[i], nil, "make", "release", "RELEASE_TARGETS="+platform, "AGENT_TARGETS="+platform)
		if r.code != 0 {
			t.Fatalf("make release: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		t.Logf("make release in %s:\n%s", dirs[i], r.stdout)
		var err error
		if sums[i], err = os.ReadFile(filepath.Join(dirs[i], "dist", "SHA256SUMS")); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(sums[0], sums[1]) {
		t.Errorf("two checkouts of one commit give different builds:\n%s\n%s", sums[0], sums[1])
	}
	name := "shmdoctor_v9.8.7_linux_" + runtime.GOARCH
	bin := filepath.Join(dirs[0], "dist", name)
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums[0]) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant\n%s", sums[0], want)
	}
	modcache, _ := exec.Command("go", "env", "GOMODCACHE").Output()
	for _, p := range []string{dirs[0], strings.TrimSpace(string(modcache))} {
		if p != "" && bytes.Contains(data, []byte(p)) {
			t.Errorf("the binary holds the build path %s", p)
		}
	}

	r := runIn(t, dirs[0], nil, bin, "version", "--format", "json")
	var v struct {
		Version, Commit, Go, OS, Arch string
		CommitTime                    string `json:"commit_time"`
		Agents                        []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 {
		t.Fatalf("version: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	head := strings.TrimSpace(runIn(t, dirs[0], nil, "git", "rev-parse", "HEAD").stdout)
	if v.Version != "v9.8.7" || v.Commit != head || v.CommitTime != commitTime || v.OS != "linux" || v.Arch != runtime.GOARCH ||
		len(v.Agents) != 1 || v.Agents[0] != platform {
		t.Errorf("version: %+v, want v9.8.7 at %s (%s) embedding %s", v, head, commitTime, platform)
	}

	// The embedded agent's image: removed first, so that only this run can have made it.
	agent := gunzip(t, filepath.Join(dirs[0], "engine", "agents", "linux-"+runtime.GOARCH+".gz"))
	agentSum := sha256.Sum256(agent)
	ref := "shmdoctor-probe:" + hex.EncodeToString(agentSum[:])[:12]
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	_, _ = c.ImageRemove(ctx, ref, client.ImageRemoveOptions{})
	t.Cleanup(func() { _, _ = c.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{}) })
	r = runIn(t, dirs[0], []string{"SHMDOCTOR_PROBE_AGENT=embedded"}, bin, "host", "--need", "64m", "--format", "json")
	var h struct {
		DefaultShmBytes *int64 `json:"default_shm_bytes"`
		CanGive         *bool  `json:"can_give"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || r.code != 0 || h.DefaultShmBytes == nil || h.CanGive == nil || !*h.CanGive {
		t.Fatalf("host with the embedded agent: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if _, err := c.ImageInspect(ctx, ref); err != nil {
		t.Errorf("the embedded agent's image %s was not used: %v", ref, err)
	}
}

func gunzip(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
