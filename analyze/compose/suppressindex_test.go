package compose

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// TestSuppressionsLinear loads and checks a stack whose every service has a comment that
// silences its finding and every other one an x-shmdoctor.ignore, at two sizes, the second
// four times the first, and counts the suppressors tried and the service definitions read
// to scope them: linear work grows about 4x (the test allows 5x); trying every suppressor
// on every finding, or reading every service for every comment, grows 16x.
func TestSuppressionsLinear(t *testing.T) {
	const small, factor = 100, 4
	var work [2]int64
	for i, n := range []int{small, small * factor} {
		var b strings.Builder
		b.WriteString("services:\n")
		for s := range n {
			fmt.Fprintf(&b, "  # shmdoctor-ignore SHM001 the host's /dev/shm on purpose\n  s%d:\n    image: busybox\n    ipc: host\n    shm_size: 1g\n", s)
			if s%2 == 0 {
				b.WriteString("    x-shmdoctor: {ignore: [SHM001]}\n")
			}
		}
		dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": b.String()})
		analyze.SuppressionWork.Store(0)
		p := Load(context.Background(), Options{Paths: []string{filepath.Join(dir, "compose.yaml")}})[0]
		if len(p.Errors) > 0 {
			t.Fatal(p.Errors[0])
		}
		silenced := 0
		for _, f := range rules.Check(p, analyze.Config{}) {
			if f.Rule == "SHM001" && f.Suppressed != nil && f.Suppressed.Kind == analyze.SuppressComment {
				silenced++
			}
		}
		if silenced != n {
			t.Fatalf("%d services: %d findings silenced by their comment", n, silenced)
		}
		work[i] = analyze.SuppressionWork.Load()
	}
	ratio := float64(work[1]) / float64(work[0])
	t.Logf("suppression work: %d -> %d for %dx the services: %.2fx", work[0], work[1], factor, ratio)
	if ratio > factor*1.25 {
		t.Errorf("suppression work grew %.2fx for %dx the services (%d -> %d): not linear", ratio, factor, work[0], work[1])
	}
}
