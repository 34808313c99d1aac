package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/probe"
)

// hostileTail is what an attacker appends to a value: a line break that would forge a line
// (and a workflow command after it), the runners' command markers, terminal escapes (SGR,
// an OSC 8 hyperlink, an OSC 52 clipboard write, BEL), DEL, C1 controls (NEL, CSI), the
// Unicode line and paragraph separators, a bidi override, a tab, a carriage return, and a
// non-breaking space before "::", which a runner trims as it trims spaces.
const hostileTail = " nl\nforgedline\n  ::warning title=FORGED::f ##[add-mask]hidden ##vso[task.setvariable variable=x]y" +
	" \x1b[31mred \x1b]8;;https://evil.example\x07link\x1b]8;;\x07 \x1b]52;c;ZXZpbA==\x07 bell\x07 del\x7f" +
	" nel\u0085 csi\u009b31m ls\u2028ps\u2029 rlo\u202eolr tab\there cr\rend \u00a0::notice::nbsp"

// hostile is s as an attacker writes it: a workflow command in front, hostileTail behind.
func hostile(s string) string { return "::error::" + s + hostileTail }

// poison rewrites every string reachable from v through exported fields, pointers, slices
// and maps (keys too, so that a service still finds its measurement) with hostile. With all,
// empty strings too, so that fields the report leaves empty are filled; otherwise only the
// set ones, so that the report keeps its shape. Interfaces (a project's Document) are left
// alone: their strings come from real files (see the cmd tests with hostile file names).
func poison(v reflect.Value, all bool, seen map[uintptr]bool) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() && (all || v.String() != "") {
			v.SetString(hostile(v.String()))
		}
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		poison(v.Elem(), all, seen)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				poison(v.Field(i), all, seen)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			poison(v.Index(i), all, seen)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			poison(k, true, seen)
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			poison(e, all, seen)
			out.SetMapIndex(k, e)
		}
		if v.CanSet() {
			v.Set(out)
		}
	}
}

// hostileReport is every kind of project a report holds (compose with measurements, the
// probe's evidence and errors, suppressions of every kind, Kubernetes manifests whose fixes
// hold YAML, a variant, load errors, a finding shared by projects), each of its strings
// made hostile.
func hostileReport(t *testing.T, all bool) *Report {
	t.Helper()
	rep := probedReport(t)
	rep.Projects = append(rep.Projects, suppressedReport(t).Projects...)
	rep.Projects = append(rep.Projects, brokenReport().Projects...)
	for _, dir := range []string{"testdata/k8s/SHM101", "testdata/k8s/SHM105"} {
		for _, p := range compose.Load(context.Background(), compose.Options{Paths: []string{dir}}) {
			rep.Projects = append(rep.Projects, &Project{Project: p, Findings: rules.Check(p, analyze.Config{})})
		}
	}
	demo := rep.Projects[0]
	demo.Variant = &analyze.Variant{File: "docker-compose.gpu.yml", Base: "compose.yaml", Why: "it has services"}
	demo.Notes = append(demo.Notes, "a note")
	for _, m := range demo.Measurements {
		m.Omitted = []string{"a setting the probe did not copy"}
		if m.Write != nil {
			m.Write.Reason, m.Write.BudgetCapped = "capped by the budget", true
		}
	}
	demo.Measurements["vllm"] = &analyze.Measurement{Error: "error setting rlimit type 8: operation not permitted"}
	demo.Findings[0].Projects = []string{"demo", "other"}
	rep.Config, rep.ProbeNote = ".shmdoctor.yaml", "skipped: the daemon did not answer"
	poison(reflect.ValueOf(rep), all, map[uintptr]bool{})
	return rep
}

// unsafeRune reports whether r may not appear raw in what the doctor prints for people: a
// control character (C0, DEL, C1), a format character (bidi overrides), a line or
// paragraph separator, any space but the ASCII one.
func unsafeRune(r rune) bool { return r != ' ' && !strconv.IsPrint(r) }

// lineProblem says what is wrong with one line of human-readable output, "" when nothing:
// a raw character that steers a terminal or breaks the line, a workflow command a runner
// would read ("::" after leading white space, "##[" or "##vso[" anywhere).
func lineProblem(l string) string {
	for i, r := range l {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(l[i:]); n == 1 {
				return "invalid UTF-8"
			}
		}
		if unsafeRune(r) {
			return "raw " + strconv.QuoteRune(r)
		}
	}
	switch {
	case strings.HasPrefix(strings.TrimLeft(l, " "), "::"):
		return "a line a runner reads as a workflow command"
	case strings.Contains(l, "##["), strings.Contains(l, "##vso["):
		return "a runner's legacy command"
	}
	return ""
}

// checkVisible fails on a hostile value that reached out without its visible escapes: each
// line break and each colour code of hostileTail must be printed as \n and \x1b.
func checkVisible(t *testing.T, where, out string) {
	t.Helper()
	for _, c := range []struct{ bare, escaped string }{{"forgedline", `nl\nforgedline`}, {"31mred", `\x1b[31mred`}, {"olr", `\u202eolr`}} {
		if n, e := strings.Count(out, c.bare), strings.Count(out, c.escaped); n != e {
			t.Errorf("%s: %d of %d %q printed without the escape %s", where, n-e, n, c.bare, c.escaped)
		}
	}
}

// checkHuman checks every line of a report for people.
func checkHuman(t *testing.T, where, out string) {
	t.Helper()
	bad := 0
	for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if p := lineProblem(l); p != "" && bad < 5 {
			bad++
			t.Errorf("%s line %d: %s: %q", where, i+1, p, l)
		}
	}
	checkVisible(t, where, out)
}

// sgr is a colour code, the only escape sequence the palette writes.
var sgr = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

// checkColoured checks a coloured report: every escape sequence is a colour code, and the
// text without them is as safe as an uncoloured one.
func checkColoured(t *testing.T, where, out string) {
	t.Helper()
	if !sgr.MatchString(out) {
		t.Fatalf("%s: no colour at all", where)
	}
	checkVisible(t, where, out) // before the colours are taken out: a raw \x1b[31m is one
	plain := sgr.ReplaceAllString(out, "")
	for i, l := range strings.Split(strings.TrimSuffix(plain, "\n"), "\n") {
		if p := lineProblem(l); p != "" {
			t.Errorf("%s line %d: %s: %q", where, i+1, p, l)
			return
		}
	}
}

// checkStrings checks the strings a consumer of a structured format reads: each line of
// each one as safe as a line of text, and escaped as the text report escapes it.
func checkStrings(t *testing.T, where string, strs []string) {
	t.Helper()
	for _, s := range strs {
		for _, l := range strings.Split(s, "\n") {
			if p := lineProblem(l); p != "" {
				t.Errorf("%s: a string holds %s: %q", where, p, s)
				return
			}
		}
		checkVisible(t, where, s)
	}
}

// jsonStrings are every string of a JSON document (of each line of a JSON stream), keys
// included, but URIs: a URI's own escapes (%0A, %1B) are what its consumer reads, and they
// are checked to hold no raw character apart.
func jsonStrings(t *testing.T, where, doc string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(doc))
	var out, uris []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case string:
			if key == "uri" {
				uris = append(uris, v)
			} else {
				out = append(out, v)
			}
		case []any:
			for _, e := range v {
				walk(key, e)
			}
		case map[string]any:
			for k, e := range v {
				out = append(out, k)
				walk(k, e)
			}
		}
	}
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: not valid JSON: %v\n%s", where, err, doc)
		}
		walk("", v)
	}
	for _, u := range uris {
		if p := lineProblem(u); p != "" {
			t.Errorf("%s: a URI holds %s: %q", where, p, u)
		}
	}
	return out
}

// xmlStrings are every attribute value and text of an XML document.
func xmlStrings(t *testing.T, where, doc string) []string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	var out []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: not valid XML: %v", where, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			for _, a := range tok.Attr {
				out = append(out, a.Value)
			}
		case xml.CharData:
			out = append(out, string(tok))
		}
	}
}

// githubLine is a workflow command as the github format writes it: a command the doctor
// chose, properties whose values hold no delimiter, and data.
var githubLine = regexp.MustCompile(`^::(error|warning|notice) ((?:[a-z]+=[^:,]*)(?:,[a-z]+=[^:,]*)*)::(.*)$`)

// checkGitHub checks the workflow commands: each line one command of the doctor's own,
// every value escaped as the runner unescapes it, nothing raw.
func checkGitHub(t *testing.T, where, out string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		m := githubLine.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("%s: not a command of the doctor's: %q", where, l)
			continue
		}
		for _, s := range []string{m[2], m[3]} {
			if p := lineProblem(s); p != "" && !strings.HasPrefix(p, "a line a runner reads") {
				t.Errorf("%s: %s in %q", where, p, l)
			}
			if strings.Contains(strings.NewReplacer("%25", "", "%0A", "", "%0D", "", "%3A", "", "%2C", "").Replace(s), "%") {
				t.Errorf("%s: an unescaped %% in %q", where, l)
			}
		}
		// what the runner shows, once it has unescaped the message
		shown := strings.NewReplacer("%0A", "\n", "%0D", "\r", "%25", "%").Replace(m[3])
		checkStrings(t, where+" message", []string{shown})
	}
}

// TestHostileReport fills every string of a report with a hostile value (workflow
// commands, runner markers, terminal escapes, line breaks, C1 and bidi characters) and
// renders it in every format: no line for people holds a raw control character or a
// command a CI runner would read, the structured formats stay valid with the same escapes
// inside their strings, and each workflow command of the github format is the doctor's.
func TestHostileReport(t *testing.T) {
	for _, all := range []bool{false, true} {
		rep := hostileReport(t, all)
		name := "set strings"
		if all {
			name = "every string"
		}
		t.Run(name, func(t *testing.T) {
			for _, o := range []Options{
				{Verbose: true, ShowSuppressed: true},
				{ShowSuppressed: true, Width: 40},
				{Quiet: true},
			} {
				checkHuman(t, "text", renderWith(t, "text", rep, o))
			}
			checkColoured(t, "coloured text", renderWith(t, "text", rep, Options{Verbose: true, ShowSuppressed: true, Color: true}))
			checkGitHub(t, "github", render(t, "github", rep))
			checkHuman(t, "compact", render(t, "compact", rep))
			checkHuman(t, "compact quiet", renderWith(t, "compact", rep, Options{Quiet: true}))
			for _, format := range []string{"json", "sarif", "codeclimate", "baseline"} {
				out := renderWith(t, format, rep, Options{ShowSuppressed: true})
				checkStrings(t, format, jsonStrings(t, format, out))
			}
			junit := renderWith(t, "junit", rep, Options{FailOn: analyze.Info})
			checkStrings(t, "junit", xmlStrings(t, "junit", junit))
			checkHuman(t, "junit document", junit)
		})
	}
}

// hostilePatch is what an attacker writes on the lines of a compose file a patch quotes: a
// workflow command after white space, the runners' legacy markers, terminal escapes and C1
// controls. A patch keeps its line breaks and tabs, so that it applies: they are not in it.
const hostilePatch = "   ::warning title=FORGED::f\n+  ##[add-mask]hidden \x1b]52;c;ZXZpbA==\x07 \x1b[31mred \u009b31m \u202eolr\n"

// TestHostileWatch: the watch's summary, its live view and its JSON stream escape what the
// engine and the compose file name (projects, services, containers, errors, notes); the
// lines of a patch or a snippet keep their breaks and tabs, nothing else.
func TestHostileWatch(t *testing.T) {
	for _, all := range []bool{false, true} {
		s := watchSummary()
		s.DaemonError = "the daemon stopped answering"
		s.Services[0].Errors = []string{"reading /dev/shm: permission denied"}
		poison(reflect.ValueOf(s), all, map[uintptr]bool{})
		for i := range s.Recommendations {
			r := &s.Recommendations[i]
			r.Diff, r.Snippet = "--- a/compose.yaml\n+++ b/compose.yaml\n"+hostilePatch, "services:\n"+hostilePatch
		}
		var b bytes.Buffer
		if err := WatchText(&b, s, Options{}); err != nil {
			t.Fatal(err)
		}
		checkHuman(t, "watch summary", b.String())
		b.Reset()
		if err := WatchJSONSummary(&b, s); err != nil {
			t.Fatal(err)
		}
		checkStrings(t, "watch json", jsonStrings(t, "watch json", b.String()))

		start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		sample := analyze.WatchSample{Type: "sample", Time: start.Add(7 * time.Second), Project: s.Project, Services: s.Services, Containers: s.Containers}
		for _, width := range []int{120, 40} {
			checkHuman(t, "live view", strings.Join(liveLines(sample, start, time.Second, newPalette(false), width), "\n"))
		}
		var live bytes.Buffer
		v := NewLiveView(&live, false)
		if err := v.Draw(sample, start, time.Second); err != nil {
			t.Fatal(err)
		}
		checkDrawn(t, "live view drawn", live.String())
		b.Reset()
		if err := WatchJSONSample(&b, sample); err != nil {
			t.Fatal(err)
		}
		checkStrings(t, "watch json sample", jsonStrings(t, "watch json sample", b.String()))
	}
}

// checkDrawn checks a block drawn in place: its cursor movements are the only escape
// sequences, and its lines are safe.
func checkDrawn(t *testing.T, where, out string) {
	t.Helper()
	cursor := regexp.MustCompile(`\x1b\[\d*[FK]`)
	checkColoured(t, where, cursor.ReplaceAllString(out, "\x1b[m"))
}

// TestHostileProgress: the probe's progress lines escape service names, the project's
// name and the engine's errors.
func TestHostileProgress(t *testing.T) {
	var out bytes.Buffer
	a, b := hostile("trainer"), hostile("db")
	p := NewProgress(&out, true, "probing "+hostile("llm"), []string{a, b})
	p.Update(probe.Event{Service: a, Stage: probe.StageMeasuring})
	p.Update(probe.Event{Service: b, Stage: probe.StageDone, Measurement: &analyze.Measurement{Error: hostile("the agent failed")}})
	checkDrawn(t, "progress", out.String())
}

// TestVisible holds the escaping scheme, one case per rule of Visible's documentation.
func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"compose.yaml":                                   "compose.yaml",
		"a\nb\tc\rd\ae\x1b[31mf\x00":                     `a\nb\tc\rd\ae\x1b[31mf\x00`,
		"del\x7f c1\u0085\u009b":                         `del\x7f c1\u0085\u009b`,
		"ls\u2028ps\u2029 rlo\u202e nbsp\u00a0 zw\u200b": `ls\u2028ps\u2029 rlo\u202e nbsp\u00a0 zw\u200b`,
		"bad\xffutf8":                                    `bad\xffutf8`,
		"::warning::x":                                   `:\x3awarning::x`,
		"x ::error::y":                                   `x :\x3aerror::y`,
		"a::b [::1]:80":                                  "a::b [::1]:80", // not where a line can start
		"x\n  ::warning":                                 `x\n  :\x3awarning`,
		"## heading ##[add-mask]s ##vso[":                `## heading #\x23[add-mask]s #\x23vso[`,
		"back\\slash ×→…":                                "back\\slash ×→…",
	} {
		got := Visible(in)
		if got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
		if again := Visible(got); again != got {
			t.Errorf("Visible is not idempotent on %q: %q", got, again)
		}
	}
}

// TestVisibleFix: a remediation keeps the line breaks of its YAML snippet, and only those.
func TestVisibleFix(t *testing.T) {
	fix := "Mount it:\n\n    volumes:\n      - name: dshm\n\nKeep the limit."
	if got := visibleFix(fix); got != fix {
		t.Errorf("a snippet's lines are escaped:\n%s", got)
	}
	for in, want := range map[string]string{
		"Set ipc: shareable on service x\n  ::warning title=F::f.": `Set ipc: shareable on service x\n  :\x3awarning title=F::f.`,
		"Mount it:\n\n    - name: app\x1b]52;c;e\a\nforged\n":      "Mount it:\n\n    - name: app\\x1b]52;c;e\\a\\nforged\n",
		"Mount it:\n\n    ::x\n\n::y":                              "Mount it:\n\n    :\\x3ax\n\n:\\x3ay",
	} {
		if got := visibleFix(in); got != want {
			t.Errorf("visibleFix(%q) = %q, want %q", in, got, want)
		}
		if got := visibleFix(want); got != want {
			t.Errorf("visibleFix is not idempotent on %q: %q", want, got)
		}
	}
}

// TestVisiblePatch: a patch of an ordinary file (tabs, CRLF line ends) is printed as it is;
// a hostile line is escaped.
func TestVisiblePatch(t *testing.T) {
	plain := "--- a/compose.yaml\n+++ b/compose.yaml\n@@ -1,2 +1,3 @@\n services:\r\n   a: # tab\there\n+    shm_size: 1g\n"
	if got := VisiblePatch(plain); got != plain {
		t.Errorf("an ordinary patch changed:\n%q", got)
	}
	if got, want := VisiblePatch("   ::warning::x\n+##[add-mask]y \x1b[2J\n"), "   :\\x3awarning::x\n+#\\x23[add-mask]y \\x1b[2J\n"; got != want {
		t.Errorf("VisiblePatch = %q, want %q", got, want)
	}
}

// TestLineWriter: a line the renderer composed keeps the palette's colours and loses
// anything else that would steer the terminal, break the line or read as a command.
func TestLineWriter(t *testing.T) {
	pal := newPalette(true)
	var b bytes.Buffer
	w := newLineWriter(&b, Options{Color: true})
	w.line("  " + pal.Rule.Render("SHM001") + " \x1b]8;;x\a\n::warning::y")
	w.line(pal.Dim.Render("::") + "notice::z")
	want := "  " + pal.Rule.Render("SHM001") + " \\x1b]8;;x\\a\\n::warning::y\n" + pal.Dim.Render(`:\x3a`) + "notice::z\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}

// TestVisibleCopy: the copy a structured format encodes has every string escaped as its
// field says, shares what the original shared, and leaves the original as it was.
func TestVisibleCopy(t *testing.T) {
	ev := &analyze.Evidence{Message: "oom\x1b[2J"}
	type doc struct {
		Findings []analyze.Finding
		Docs     string `visible:"own"`
		Lines    string `visible:"lines"`
		Skipped  string `json:"-"`
		Any      map[string]any
	}
	in := doc{
		Findings: []analyze.Finding{{Message: "m\n::x", Remediation: "Mount it:\n\n    - a\n", Evidence: ev}, {Evidence: ev}},
		Docs:     "# doc\n\n```yaml\nipc: host\n```\n", Lines: "a\x07\n::b", Skipped: "raw\x1b",
		Any: map[string]any{"k\x1b": analyze.SuppressionKind("kind\x07")},
	}
	out := visibleCopy(in).(doc)
	f := out.Findings[0]
	if f.Message != `m\n::x` || f.Remediation != in.Findings[0].Remediation || f.Evidence.Message != `oom\x1b[2J` {
		t.Errorf("findings: %+v", f)
	}
	if out.Findings[1].Evidence != f.Evidence || f.Evidence == ev {
		t.Error("a shared pointer is copied once, and the original is not touched")
	}
	if out.Docs != in.Docs || out.Lines != "a\\a\n:\\x3ab" || out.Skipped != in.Skipped {
		t.Errorf("tags: %q %q %q", out.Docs, out.Lines, out.Skipped)
	}
	if out.Any[`k\x1b`] != analyze.SuppressionKind(`kind\a`) {
		t.Errorf("map: %v", out.Any)
	}
	if in.Findings[0].Message != "m\n::x" || ev.Message != "oom\x1b[2J" {
		t.Error("the original changed")
	}
	defer func() {
		if recover() == nil {
			t.Error("an unexported embedded struct of strings is copied silently")
		}
	}()
	type inner struct{ S string }
	visibleCopy(struct{ inner }{inner{"x"}})
}

// TestGitHubMessageLines: a remediation's YAML keeps its lines in an annotation (%0A, which
// the runner turns back into line breaks), with %25 for a percent; a value's line break
// stays visible as \n.
func TestGitHubMessageLines(t *testing.T) {
	rep := &Report{Projects: []*Project{{Project: &analyze.Project{Name: "k"}, Findings: []analyze.Finding{{
		Rule: "SHM101", Name: "no-shm-volume", Severity: analyze.Warning, Pos: analyze.Pos{File: "d.yaml", Line: 3},
		Message:     "no volume for 100% of x\ny",
		Remediation: "Mount it:\n\n    volumes:\n      - name: dshm\n\nKeep it.",
	}}}}}
	want := "::warning file=d.yaml,line=3,title=SHM101 no-shm-volume::no volume for 100%25 of x\\ny. fix: Mount it:%0A%0A    volumes:%0A      - name: dshm%0A%0AKeep it.\n"
	if got := render(t, "github", rep); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
