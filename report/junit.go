package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// The JUnit XML shape CI systems read (Jenkins, GitLab, Azure Pipelines, CircleCI): a
// testsuites root, one testsuite per project, one testcase per finding and per service
// without findings.
type junitSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr"`
	junitCounts
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name string `xml:"name,attr"`
	junitCounts
	File  string      `xml:"file,attr,omitempty"`
	Cases []junitCase `xml:"testcase"`
}

// junitCounts are the attributes a testsuites root and each testsuite carry.
type junitCounts struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Skipped  int `xml:"skipped,attr"`
	Time     int `xml:"time,attr"` // seconds: the doctor times nothing
}

// add counts another suite's results in c.
func (c *junitCounts) add(o junitCounts) {
	c.Tests += o.Tests
	c.Failures += o.Failures
	c.Errors += o.Errors
	c.Skipped += o.Skipped
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Time      int           `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty" visible:"lines"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata" visible:"lines"`
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// JUnit writes the report as JUnit XML, for CI systems that show only that: one testsuite
// per project, one testcase per finding (named by rule and place, classed by project and
// service), failed when the finding is at or above Options.FailOn and passed with the
// finding as its output below it; a suppressed finding is a skipped testcase, a load error
// an errored one, and each service without findings a passed one.
func JUnit(w io.Writer, r *Report, o Options) error {
	out := junitSuites{Name: "shmdoctor"}
	for _, p := range r.Projects {
		s := junitSuite{Name: p.Name}
		if len(p.Files) > 0 {
			s.File = p.Files[0]
		}
		for _, e := range p.Errors {
			s.Cases = append(s.Cases, junitCase{
				Name: "load " + e.Pos.String(), Classname: p.Name, File: e.File, Line: e.Line,
				Error: &junitProblem{Message: e.Msg, Type: ccLoadError, Text: Visible(e.Pos.String()) + ": " + Visible(e.Msg)},
			})
		}
		withFindings := map[string]bool{}
		for _, f := range byService(p.Findings) {
			withFindings[f.Service] = true
			c := junitCase{
				Name:      f.Rule + " " + f.Name + " at " + f.Pos.String(),
				Classname: p.Name + "." + f.Service,
				File:      f.File, Line: f.Line,
			}
			text := junitText(f)
			switch {
			case f.Suppressed != nil:
				c.Skipped = &junitSkipped{Message: suppressedBy(f.Suppressed)}
			case o.FailOn != 0 && f.Severity >= o.FailOn:
				c.Failure = &junitProblem{Message: f.Message, Type: f.Severity.String(), Text: text}
			default:
				c.SystemOut = text
			}
			s.Cases = append(s.Cases, c)
		}
		for _, plan := range p.Plans {
			if !withFindings[plan.Service] {
				s.Cases = append(s.Cases, junitCase{Name: "no findings", Classname: p.Name + "." + plan.Service})
			}
		}
		for _, c := range s.Cases {
			s.Tests++
			switch {
			case c.Failure != nil:
				s.Failures++
			case c.Error != nil:
				s.Errors++
			case c.Skipped != nil:
				s.Skipped++
			}
		}
		out.add(s.junitCounts)
		out.Suites = append(out.Suites, s)
	}
	ew := &errWriter{w: w}
	ew.printf("%s", xml.Header)
	if ew.err != nil {
		return ew.err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(visibleCopy(out)); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitText is a finding as a testcase's failure or output: what, where, the fix, the
// measurement that reproduced it, the projects it affects and the rule's documentation.
func junitText(f analyze.Finding) string {
	lines := []string{Visible(fmt.Sprintf("%s %s %s %s", f.Severity, f.Rule, f.Pos, f.Message)), "fix: " + visibleFix(f.Remediation)}
	for _, n := range findingNotes(f) {
		lines = append(lines, Visible(n))
	}
	lines = append(lines, RuleURL(Visible(f.Rule)))
	return strings.Join(lines, "\n")
}
