package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestOnePerPlace: under -r, a finding in a file two projects include is reported once,
// naming both projects, in every format; fingerprints are unique per result.
func TestOnePerPlace(t *testing.T) {
	t.Chdir(repoRoot(t))
	args := []string{"-r", "--probe", "never", "--fail-on", "never", "testdata/report/shared"}
	code, out, errs := shmdoctor(t, "", append(args, "--format", "json")...)
	if code != exitClean {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Projects []struct {
			Name     string
			Findings []struct {
				Rule, File string
				Projects   []string
			}
		}
		Summary map[string]int
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	shared, total := 0, 0
	for _, p := range doc.Projects {
		for _, f := range p.Findings {
			total++
			if !strings.HasSuffix(f.File, "common/trainer.yaml") {
				continue
			}
			shared++
			if p.Name != "shared-a" || !slices.Equal(f.Projects, []string{"shared-a", "shared-b"}) {
				t.Errorf("%s in %s names projects %v", f.Rule, p.Name, f.Projects)
			}
		}
	}
	if shared != 3 || doc.Summary["warning"]+doc.Summary["info"]+doc.Summary["error"] != total {
		t.Errorf("%d findings in the shared file (want 3: SHM001, SHM020, SHM030), summary %v of %d", shared, doc.Summary, total)
	}

	_, out, _ = shmdoctor(t, "", append(args, "--format", "text")...)
	if got := strings.Count(out, "in projects shared-a, shared-b"); got != 3 {
		t.Errorf("text names both projects %d times, want 3:\n%s", got, out)
	}

	_, out, _ = shmdoctor(t, "", append(args, "--format", "sarif")...)
	var log struct {
		Runs []struct {
			Results []struct{ PartialFingerprints map[string]string }
		}
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range log.Runs[0].Results {
		fp := r.PartialFingerprints["shmdoctor/v1"]
		if seen[fp] {
			t.Errorf("sarif: fingerprint %s twice", fp)
		}
		seen[fp] = true
	}
	if len(log.Runs[0].Results) != total {
		t.Errorf("sarif: %d results, want %d", len(log.Runs[0].Results), total)
	}

	_, out, _ = shmdoctor(t, "", append(args, "--format", "codeclimate")...)
	var issues []struct{ Fingerprint string }
	if err := json.Unmarshal([]byte(out), &issues); err != nil {
		t.Fatal(err)
	}
	seen = map[string]bool{}
	for _, i := range issues {
		if seen[i.Fingerprint] {
			t.Errorf("codeclimate: fingerprint %s twice", i.Fingerprint)
		}
		seen[i.Fingerprint] = true
	}
	if len(issues) != total {
		t.Errorf("codeclimate: %d issues, want %d", len(issues), total)
	}
}
