package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hostile is a checkout that names files outside it, in the ways issue 21 found: an include,
// a .env setting COMPOSE_FILE (-r . is what the Action runs), a .env that links to a
// credentials file. Each outside file holds a line with SECRET in it.
func hostile(t *testing.T) (dir string, cases map[string]map[string]string) {
	dir = t.TempDir()
	writeFiles(t, dir, map[string]string{
		"outside/shadow":     "root_SECRET_hash: x\nbin_SECRET_two: y\n",
		"outside/creds.json": `{"type": "service_account", "private_key": "SECRET-KEY"}` + "\n",
	})
	out := filepath.Join(dir, "outside")
	return dir, map[string]map[string]string{
		"include":               {"compose.yaml": "include: [../../../../../../../../../../" + out + "/shadow]\n" + pgCompose},
		"compose file in .env":  {"compose.yaml": pgCompose, ".env": "COMPOSE_FILE=compose.yaml:" + out + "/shadow\n"},
		".env links to secrets": {"compose.yaml": pgCompose, ".env": "->" + out + "/creds.json"},
	}
}

// TestOutsideFilesAreNotPrinted runs the checkout's hostile cases as the Action does, in the
// formats a CI log shows: each is refused at its line, exit 2, the project is analysed, and
// no line of the outside files is printed.
func TestOutsideFilesAreNotPrinted(t *testing.T) {
	dir, cases := hostile(t)
	for name, files := range cases {
		for _, format := range []string{"text", "github", "json"} {
			t.Run(name+"/"+format, func(t *testing.T) {
				p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
				if _, err := os.Stat(p); err != nil {
					writeFiles(t, p, files)
				}
				t.Chdir(p)
				code, stdout, stderr := shmdoctor(t, "", "--probe", "never", "--format", format, "-r", ".")
				if strings.Contains(stdout+stderr, "SECRET") {
					t.Fatalf("a line of an outside file is printed:\n%s%s", stdout, stderr)
				}
				if code != exitUsage || !strings.Contains(stdout, "outside the project root") || !strings.Contains(stdout, "SHM010") {
					t.Errorf("exit %d, want 2 with the refusal and the analysis:\n%s%s", code, stdout, stderr)
				}
			})
		}
	}
}

// fifo makes a FIFO that yields content once, as <(...) does.
func fifo(t *testing.T, path, content string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = f.WriteString(content)
	}()
}

// TestFIFOFlagsAreReadOnce gives -f, --env-file and --config as <(...): each is read once,
// as a PATH given so is, and what it held is used.
func TestFIFOFlagsAreReadOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		fifo  string
		args  []string
		code  int
		want  string
	}{
		{"-f", nil, pgCompose, []string{"-f", "in.fifo"}, 1, "SHM010 in.fifo:2:3"},
		{"--env-file", map[string]string{"p/compose.yaml": pgCompose + "    shm_size: ${SIZE}\n"}, "SIZE=1g\n", []string{"--env-file", "in.fifo", "p"}, 0, "db       1 GiB"},
		{"--config", map[string]string{"p/compose.yaml": pgCompose}, "fail-on: never\n", []string{"--config", "in.fifo", "p"}, 0, "SHM010 p/compose.yaml:2:3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			fifo(t, filepath.Join(dir, "in.fifo"), tc.fifo)
			code, out := boundedDoctor(t, dir, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, tc.code, tc.want, out)
			}
		})
	}
}

// TestBombsAreBounded runs the expansion bombs of issue 21 at full size in 1 GiB of address
// space: each ends, refused at its line or loaded once a file.
func TestBombsAreBounded(t *testing.T) {
	var dbl strings.Builder
	dbl.WriteString("A0=xx\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&dbl, "A%d=${A%d}${A%d}\n", i, i-1, i-1)
	}
	diamond := map[string]string{}
	for i := 0; i < 12; i++ {
		diamond[fmt.Sprintf("dia/f%d.yaml", i)] = fmt.Sprintf("include: [f%d.yaml, f%d.yaml]\nservices:\n  s%d:\n    image: alpine\n", i+1, i+1, i)
	}
	diamond["dia/f12.yaml"] = "services:\n  s12:\n    image: alpine\n"
	diamond["dia/compose.yaml"] = diamond["dia/f0.yaml"]
	for _, tc := range []struct {
		name  string
		files map[string]string
		code  int
		want  string
	}{
		{"doubling .env", map[string]string{"dbl/compose.yaml": pgCompose, "dbl/.env": dbl.String()}, 2, "dbl/.env:20 the value would expand to more than 1 MiB: refusing an expansion bomb"},
		{"nested defaults", map[string]string{"nest/compose.yaml": pgCompose + "    shm_size: \"" + strings.Repeat("${A:-", 8000) + "1g" + strings.Repeat("}", 8000) + "\"\n"}, 2, "nest/compose.yaml:5:5 services.db.shm_size: variables are nested 8000 deep"},
		{"include diamond", diamond, 0, "no findings in 2 projects, 26 services"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			code, out := boundedDoctor(t, dir, "-r", ".")
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, tc.code, tc.want, out)
			}
		})
	}
}
