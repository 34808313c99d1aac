package compose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
)

// FuzzLoad feeds arbitrary bytes to the loader as a compose file: it must never panic, and
// every error it reports must name the file.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("../../testdata/rules/*/compose.yaml")
	seeds = append(seeds, "../../testdata/demo/compose.yaml")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("services: {a: {image: x, shm_size: 16 gigs}}"))
	f.Add([]byte("x: &a [*a]"))
	f.Add([]byte("services:\n  a:\n    <<: *missing\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		file := filepath.Join(dir, "compose.yaml")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, p := range Load(context.Background(), Options{Paths: []string{file}}) {
			for _, e := range p.Errors {
				if e.File == "" || strings.Contains(e.Msg, "\n") {
					t.Fatalf("error not located or not one line: %q", e.Error())
				}
			}
			if p.Compose {
				rules.Check(p, analyze.Config{})
			}
		}
	})
}

// FuzzResolve builds services from fuzzed shm settings and checks the invariants of the
// model: a joined service predicts its donor's size, a mount decides over shm_size, and
// every finding is located.
func FuzzResolve(f *testing.F) {
	f.Add("host", "2g", "", "4g", "")
	f.Add("service:donor", "1g", "", "", "shareable")
	f.Add("", "8g", "/dev/shm:size=256m", "1g", "")
	f.Add("none", "", "/dev/shm", "", "")
	f.Add("private", "0", "", "64m", "host")
	f.Fuzz(func(t *testing.T, ipc, shm, tmpfs, mem, donorIPC string) {
		for _, s := range []string{ipc, shm, tmpfs, mem, donorIPC} {
			if strings.ContainsAny(s, "\"\\\n\r\t$") || len(s) > 40 {
				return
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "services:\n  donor:\n    image: alpine\n")
		if donorIPC != "" {
			fmt.Fprintf(&b, "    ipc: %q\n", donorIPC)
		}
		fmt.Fprintf(&b, "  app:\n    image: pytorch/pytorch\n")
		if ipc != "" {
			fmt.Fprintf(&b, "    ipc: %q\n", ipc)
		}
		if shm != "" {
			fmt.Fprintf(&b, "    shm_size: %q\n", shm)
		}
		if mem != "" {
			fmt.Fprintf(&b, "    mem_limit: %q\n", mem)
		}
		if tmpfs != "" {
			fmt.Fprintf(&b, "    tmpfs: [%q]\n", tmpfs)
		}
		dir := t.TempDir()
		file := filepath.Join(dir, "compose.yaml")
		if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, p := range Load(context.Background(), Options{Paths: []string{file}}) {
			if !p.Compose {
				continue
			}
			app, donor := p.Plan("app"), p.Plan("donor")
			if app.Mount != nil && app.Source != app.Mount.Type {
				t.Fatalf("mount %s does not decide the source %s", app.Mount.Type, app.Source)
			}
			if app.Source == analyze.SourceService && app.Donor == "donor" && donor.Mount == nil && len(p.Errors) == 0 {
				if (app.Predicted == nil) != (donor.Predicted == nil) || app.Predicted != nil && *app.Predicted != *donor.Predicted {
					t.Fatalf("joiner predicts %v, donor %v", app.Predicted, donor.Predicted)
				}
			}
			for _, fd := range rules.Check(p, analyze.Config{}) {
				if fd.Line == 0 {
					t.Fatalf("finding without a line: %+v", fd)
				}
			}
		}
	})
}
