package rules_test

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// The property these helpers check: no remediation text and no --fix edit leaves a
// service with a smaller effective /dev/shm than it has today, unless today's is at or
// above the memory limit (the one finding whose point is that /dev/shm is too large).
// checkFixes applies it to every fixture and every corpus file.

// shmNow is a service's /dev/shm as the property compares it: a size in bytes when the
// stack decides it, else the source it follows (the host's, half the RAM, a volume's).
type shmNow struct {
	known   bool
	size    int64
	source  string // for an unknown size: what decides it
	written int64  // the largest size the stack writes for the service, ignored or not
	limit   *int64
}

func shmOf(plan *analyze.ShmPlan) shmNow {
	s := shmNow{limit: plan.MemLimit, source: string(plan.Source)}
	if plan.Predicted != nil {
		s.known, s.size = true, *plan.Predicted
	}
	if plan.Mount != nil {
		s.source += " " + plan.Mount.Source
	}
	if plan.Configured != nil {
		s.written = *plan.Configured
	}
	if plan.Mount != nil && plan.Mount.Size != nil {
		s.written = max(s.written, *plan.Mount.Size)
	}
	return s
}

// floor is the least /dev/shm advice must keep: today's size, or, where the host decides
// it, what the stack writes.
func (s shmNow) floor() int64 {
	if s.known {
		return s.size
	}
	return s.written
}

// tooLarge reports the exemption: today's /dev/shm is at or above the memory limit.
func (s shmNow) tooLarge() bool {
	return s.known && s.limit != nil && analyze.ExceedsLimit(s.size, *s.limit)
}

func (s shmNow) String() string {
	if s.known {
		return analyze.FormatSize(s.size)
	}
	return fmt.Sprintf("%s's (%s written)", s.source, analyze.FormatSize(s.written))
}

// keeps reports whether after keeps at least what before had.
func keeps(before, after shmNow) bool {
	switch {
	case before.tooLarge():
		return true
	case after.known:
		return after.size >= before.floor()
	}
	return !before.known && before.source == after.source
}

// advisedSize finds the /dev/shm sizes a remediation names: shm_size: 2g, shm_size 2g,
// shm_size explicitly (2g), size=2g, size: 2g, sizeLimit: 2Gi, tmpfs.size 2147483648, Raise ... to 2g. Memory
// limits and ulimits are written otherwise and not matched.
var advisedSize = regexp.MustCompile(`(?:shm_size:?|shm_size explicitly \(|size=|\bsize:|sizeLimit:|tmpfs\.size|\bRaise (?:shm_size|sizeLimit|the /dev/shm tmpfs size|shm_size on service \S+) to) *([0-9]+(?:[kmgtKMGT]i?[bB]?|[bB])?)\b`)

func advisedSizes(t *testing.T, text string) []int64 {
	t.Helper()
	var out []int64
	for _, m := range advisedSize.FindAllStringSubmatch(text, -1) {
		n, err := analyze.ParseSize(m[1])
		if err != nil {
			if n, err = analyze.ParseQuantity(m[1]); err != nil {
				t.Fatalf("remediation %q names size %q: %v", text, m[1], err)
			}
		}
		out = append(out, n)
	}
	return out
}

// keepStats counts what the property checked and what broke it; parallel tests share it.
type keepStats struct {
	mu                              sync.Mutex
	remediations, fixes, violations int
	seen                            map[string]bool // remediations checked, by file:line, rule and text
}

func (k *keepStats) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return fmt.Sprintf("%d remediations naming a size and %d fixes checked, %d violations", k.remediations, k.fixes, k.violations)
}

// plansOf maps each service of a loaded project to its /dev/shm.
func plansOf(p *analyze.Project) map[string]shmNow {
	out := map[string]shmNow{}
	for _, plan := range p.Plans {
		out[p.Name+"/"+plan.Service] = shmOf(plan)
	}
	return out
}

// checkAdvice checks that every size a finding's remediation names keeps the service's
// /dev/shm.
func checkAdvice(t *testing.T, k *keepStats, p *analyze.Project, fs []analyze.Finding) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	plans := plansOf(p)
	for _, f := range fs {
		before, ok := plans[p.Name+"/"+f.Service]
		sizes := advisedSizes(t, f.Remediation)
		key := f.Pos.String() + " " + f.Rule + " " + f.Service + " " + f.Remediation
		if !ok || len(sizes) == 0 || k.seen[key] {
			continue
		}
		if k.seen == nil {
			k.seen = map[string]bool{}
		}
		k.seen[key] = true
		k.remediations++
		for _, n := range sizes {
			if !keeps(before, shmNow{known: true, size: n}) {
				k.violations++
				t.Errorf("%s %s %s: remediation advises %s, below today's /dev/shm of %s: %s", f.Pos, f.Rule, f.Service, analyze.FormatSize(n), before, f.Remediation)
			}
		}
	}
}

// checkKept checks that the fixes of a round left every service's /dev/shm at least as
// large as before.
func checkKept(t *testing.T, k *keepStats, before, after map[string]shmNow, applied []*analyze.Fix) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fixes += len(applied)
	for svc, b := range before {
		a, ok := after[svc]
		if !ok {
			continue
		}
		if !keeps(b, a) {
			k.violations++
			var descs []string
			for _, f := range applied {
				descs = append(descs, f.Description)
			}
			t.Errorf("service %s: /dev/shm was %s, %s after the fixes %s", svc, b, a, strings.Join(descs, " "))
		}
	}
}
