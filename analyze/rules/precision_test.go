package rules_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// labelsFile holds a verdict on every warning and error the rules give over the corpus,
// and the findings they should give and do not.
const labelsFile = "../../testdata/corpus/labels.tsv"

// The verdicts a label gives. Missed marks a finding that should be there and is not.
const (
	verdictRight     = "right"
	verdictWrong     = "wrong"
	verdictDebatable = "debatable"
	verdictMissed    = "missed"
)

// labelKey names a finding the way it survives edits to the rules' wording and to the
// corpus file's layout: the corpus file run, the service (or pod/container) and the rule.
type labelKey struct{ file, service, rule string }

type label struct {
	labelKey
	verdict, reason string
	line            int // in labels.tsv
}

// readLabels reads labels.tsv: tab-separated file, service, rule, verdict, reason; lines
// starting with # and blank lines are comments.
func readLabels(t *testing.T, path string) map[labelKey]label {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[labelKey]label{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		c := strings.Split(text, "\t")
		if len(c) != 5 {
			t.Errorf("%s:%d: %d columns, want 5 (file, service, rule, verdict, reason)", path, n, len(c))
			continue
		}
		l := label{labelKey: labelKey{c[0], c[1], c[2]}, verdict: c[3], reason: strings.TrimSpace(c[4]), line: n}
		switch l.verdict {
		case verdictRight, verdictWrong, verdictDebatable, verdictMissed:
		default:
			t.Errorf("%s:%d: verdict %q, want right, wrong, debatable or missed", path, n, l.verdict)
		}
		if l.reason == "" {
			t.Errorf("%s:%d: no reason given", path, n)
		}
		if rules.ByID(l.rule) == nil {
			t.Errorf("%s:%d: no rule %s", path, n, l.rule)
		}
		if prev, ok := out[l.labelKey]; ok {
			t.Errorf("%s:%d: %s %s %s already labelled on line %d", path, n, l.file, l.service, l.rule, prev.line)
		}
		out[l.labelKey] = l
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// corpusFinding is one warning or error over the corpus, with what a labeller reads.
type corpusFinding struct {
	labelKey
	severity analyze.Severity
	message  string
}

// corpusFindings runs the static rules over every compose file and manifest the corpus
// indexes, each alone as a CI job checks it (docker compose -f FILE: no override joins it;
// its includes and extends are read, within its repository), and returns the warnings and
// errors not suppressed, and the files that did not load.
func corpusFindings(t *testing.T, dir string) ([]corpusFinding, []string) {
	t.Helper()
	rows := append(testutil.CorpusRows(t, dir), testutil.CorpusIndex(t, dir, "INDEX-new.tsv")...)
	var (
		mu       sync.Mutex
		found    []corpusFinding
		unloaded []string
	)
	t.Run("run", func(t *testing.T) {
		for _, row := range rows {
			t.Run(row.Path, func(t *testing.T) {
				t.Parallel()
				parts := strings.SplitN(row.Path, "/", 3)
				projects := compose.Load(context.Background(), compose.Options{
					Paths:        []string{filepath.Join(dir, row.Path)},
					AllowOutside: []string{filepath.Join(dir, parts[0], parts[1])},
				})
				var fs []corpusFinding
				var errs int
				for _, p := range projects {
					errs += len(p.Errors)
					if !p.Loaded() {
						continue
					}
					for _, f := range rules.Check(p, analyze.Config{}) {
						if f.Severity < analyze.Warning || f.Suppressed != nil {
							continue
						}
						fs = append(fs, corpusFinding{labelKey{row.Path, f.Service, f.Rule}, f.Severity, f.Message})
					}
				}
				mu.Lock()
				defer mu.Unlock()
				found = append(found, fs...)
				if errs > 0 {
					unloaded = append(unloaded, fmt.Sprintf("%s (%d load errors)", row.Path, errs))
				}
			})
		}
	})
	if len(rows) < 100 {
		t.Fatalf("only %d files in the corpus indexes", len(rows))
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i], found[j]
		if a.file != b.file {
			return a.file < b.file
		}
		if a.service != b.service {
			return a.service < b.service
		}
		return a.rule < b.rule
	})
	sort.Strings(unloaded)
	return found, unloaded
}

// ruleScore counts one rule's labels over the findings it gave.
type ruleScore struct {
	findings, right, wrong, debatable, missed, unlabelled int
}

// ratio prints n/d as a percentage, "-" when d is 0.
func ratio(n, d int) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(d))
}

// scoreTable is the table by rule: precision counts debatable findings neither way, the
// strict precision as wrong; recall is over the findings labelled right and the misses.
func scoreTable(scores map[string]*ruleScore) string {
	var ids []string
	total := &ruleScore{}
	for id, s := range scores {
		ids = append(ids, id)
		total.findings += s.findings
		total.right += s.right
		total.wrong += s.wrong
		total.debatable += s.debatable
		total.missed += s.missed
		total.unlabelled += s.unlabelled
	}
	sort.Strings(ids)
	var b strings.Builder
	row := func(id string, s *ruleScore) {
		fmt.Fprintf(&b, "%-7s %8d %5d %5d %9d %6d %10d %9s %9s %6s\n", id, s.findings, s.right, s.wrong, s.debatable, s.missed, s.unlabelled,
			ratio(s.right, s.right+s.wrong), ratio(s.right, s.right+s.wrong+s.debatable), ratio(s.right, s.right+s.missed))
	}
	fmt.Fprintf(&b, "%-7s %8s %5s %5s %9s %6s %10s %9s %9s %6s\n", "rule", "findings", "right", "wrong", "debatable", "missed", "unlabelled", "precision", "strict", "recall")
	for _, id := range ids {
		row(id, scores[id])
	}
	row("all", total)
	b.WriteString("precision = right/(right+wrong); strict counts debatable as wrong; recall = right/(right+missed)\n")
	return b.String()
}

// TestCorpusLabels holds the rules to a judgement of every warning and error they give over
// the corpus: a finding without a label, or a label whose finding is gone (or that marks a
// miss the rules now find), fails, so labels.tsv changes with the rules. With -v it prints
// precision and recall by rule; a failure prints the unlabelled findings as rows to judge.
func TestCorpusLabels(t *testing.T) {
	dir := testutil.Corpus(t)
	labels := readLabels(t, labelsFile)
	found, unloaded := corpusFindings(t, dir)

	scores := map[string]*ruleScore{}
	score := func(rule string) *ruleScore {
		if scores[rule] == nil {
			scores[rule] = &ruleScore{}
		}
		return scores[rule]
	}
	seen := map[labelKey]bool{}
	var unlabelled []string
	for _, f := range found {
		s := score(f.rule)
		s.findings++
		if seen[f.labelKey] {
			t.Errorf("%s: %s is given twice on %s: file, service and rule no longer tell its findings apart", f.file, f.rule, f.service)
			continue
		}
		seen[f.labelKey] = true
		l, ok := labels[f.labelKey]
		switch {
		case !ok:
			s.unlabelled++
			unlabelled = append(unlabelled, fmt.Sprintf("%s\t%s\t%s\t?\t%s: %s", f.file, f.service, f.rule, f.severity, f.message))
		case l.verdict == verdictRight:
			s.right++
		case l.verdict == verdictWrong:
			s.wrong++
		case l.verdict == verdictDebatable:
			s.debatable++
		case l.verdict == verdictMissed:
			s.unlabelled++
			t.Errorf("%s:%d: %s on %s in %s is labelled missed and is now found (%s): judge it", labelsFile, l.line, l.rule, l.service, l.file, f.message)
		}
	}
	var stale []label
	for k, l := range labels {
		if l.verdict == verdictMissed {
			if !seen[k] {
				score(l.rule).missed++
			}
			continue
		}
		if !seen[k] {
			stale = append(stale, l)
		}
	}
	sort.Slice(stale, func(i, j int) bool { return stale[i].line < stale[j].line })
	t.Logf("%d warnings and errors over the corpus\n%s", len(found), scoreTable(scores))
	if len(unloaded) > 0 {
		t.Logf("files the loader refuses (no findings from them): %d\n%s", len(unloaded), strings.Join(unloaded, "\n"))
	}
	for _, l := range stale {
		t.Errorf("%s:%d: %s on %s in %s (%s) is no longer found: drop or change the label", labelsFile, l.line, l.rule, l.service, l.file, l.verdict)
	}
	if len(unlabelled) > 0 {
		t.Errorf("%d findings without a label; judge each (right, wrong, debatable), say why, and add it to %s:\n%s",
			len(unlabelled), labelsFile, strings.Join(unlabelled, "\n"))
	}
}
