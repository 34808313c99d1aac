package analyze_test

import (
	"context"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// TestEngineDefaults: a service that sets nothing is predicted the target engine's default
// /dev/shm (Podman's 64000k, Docker's 64 MiB), and the messages name the engine's figures.
func TestEngineDefaults(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": "services:\n" +
		"  app:\n    image: alpine\n" +
		"  db:\n    image: postgres:16\n" +
		"  gpu:\n    image: alpine\n    ipc: host\n    shm_size: 2g\n"})
	for _, tc := range []struct {
		target    analyze.Target
		predicted int64
		shm010    string
		shm001    string
	}{
		{analyze.TargetCompose, 64 << 20, "/dev/shm is the 64 MiB default", "shm_size 2 GiB is ignored: ipc is host"},
		{analyze.TargetPodman, 65536000, "/dev/shm is the 62.5 MiB default", "shm_size 2 GiB with ipc: host: podman refuses to create the container"},
	} {
		t.Run(string(tc.target), func(t *testing.T) {
			ps := compose.Load(context.Background(), compose.Options{Paths: []string{dir}, Target: tc.target})
			if len(ps) != 1 || len(ps[0].Errors) > 0 {
				t.Fatalf("loading: %d projects, errors %v", len(ps), ps[0].Errors)
			}
			p := ps[0]
			if got := p.Plan("app").Predicted; got == nil || *got != tc.predicted {
				t.Errorf("app predicted %v, want %d", got, tc.predicted)
			}
			msgs := map[string]string{}
			for _, f := range rules.Check(p, analyze.Config{Target: tc.target}) {
				msgs[f.Rule] = f.Message
			}
			if !strings.Contains(msgs["SHM010"], tc.shm010) {
				t.Errorf("SHM010 says %q, want %q in it", msgs["SHM010"], tc.shm010)
			}
			if !strings.Contains(msgs["SHM001"], tc.shm001) {
				t.Errorf("SHM001 says %q, want %q in it", msgs["SHM001"], tc.shm001)
			}
		})
	}
}
