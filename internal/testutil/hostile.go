package testutil

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// HostileStrings are what a pull request writes where the doctor prints a name or a value
// back: workflow commands at the start of a line or behind a line break, the runners'
// markers, terminal escapes (SGR, an OSC 8 hyperlink, an OSC 52 clipboard write, a window
// title), BEL, DEL, C1 controls, the Unicode line separators, bidi overrides, a carriage
// return that rewrites a line, and spaces a runner trims before "::".
var HostileStrings = []string{
	"x\n::warning title=FORGED::forged",
	"x\n  ::error file=compose.yaml,line=1::forged",
	"::notice::at the start",
	"x\r::warning::carriage return",
	"x ##[add-mask]hidden",
	"x ##[error]legacy command",
	"x ##vso[task.setvariable variable=x]y",
	"red\x1b[31mcolour\x1b[0m",
	"\x1b]8;;https://evil.example\x07link\x1b]8;;\x07",
	"\x1b]52;c;ZXZpbA==\x07clipboard",
	"\x1b]0;title\x07window",
	"\x1b[2J\x1b[Hclear",
	"bell\x07bell",
	"del\x7fdel",
	"nel\u0085::warning::c1 line break",
	"csi\u009b31mred",
	"ls\u2028::warning::line separator",
	"ps\u2029paragraph",
	"rlo\u202eolr",
	"lri\u2066isolate\u2069",
	"tab\t::warning::tab",
	"nbsp\u00a0::warning::no-break space",
	"ideographic\u3000::warning::space",
	"vt\x0b::warning::vertical tab",
	"ff\x0c::warning::form feed",
	"nul\x00nul",
}

// workflowCommand is a line a GitHub runner (or an Azure agent) reads as a command: "::"
// after white space the runner trims (Unicode's too), or "##[" or "##vso[" anywhere.
var workflowCommand = regexp.MustCompile(`^[\s\x{00a0}\x{3000}\x{2000}-\x{200b}\x{feff}]*::`)

// CheckVisible fails text, a human-readable output (a text report, standard error, a
// compact or github report, a JSON string decoded), if it holds what the doctor must never
// print from its input: a control character but the line break (and the colour codes of
// the palette when colour is on, which the suites keep off), a format or line-separator
// character, a line a runner reads as a command, or a runner's marker. own, when set,
// accepts the lines the doctor writes as commands itself (the github format).
func CheckVisible(text string, own func(line string) bool) error {
	if !utf8.ValidString(text) {
		return fmt.Errorf("not UTF-8")
	}
	for i, line := range strings.Split(text, "\n") {
		for _, r := range line {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) {
				return fmt.Errorf("line %d holds %U: %q", i+1, r, line)
			}
		}
		if strings.Contains(line, "##[") || strings.Contains(line, "##vso[") {
			return fmt.Errorf("line %d holds a runner's marker: %q", i+1, line)
		}
		if workflowCommand.MatchString(line) && (own == nil || !own(line)) {
			return fmt.Errorf("line %d is read as a workflow command: %q", i+1, line)
		}
	}
	return nil
}

// CheckPatch is CheckVisible for a diff of the user's own files, which keeps their tabs.
func CheckPatch(text string) error { return CheckVisible(strings.ReplaceAll(text, "\t", " "), nil) }

// GitHubCommand accepts a line the github format writes: an annotation command, error,
// warning or notice, and nothing else. Its properties may have lost a stretch to the
// secrets' scrubbing (${NAME}) where a value held the doctor's own words (" file=" and a
// file's name): that breaks the annotation, and forges nothing.
var GitHubCommand = regexp.MustCompile(`^::(error|warning|notice)( |::|\$\{)`).MatchString

// CheckJSON fails b if it is not JSON, or if a string it holds fails CheckVisible: JSON
// consumers read the same escapes as the text report's readers.
func CheckJSON(b []byte) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case string:
			return CheckVisible(v, nil)
		case []any:
			for _, e := range v {
				if err := walk(e); err != nil {
					return err
				}
			}
		case map[string]any:
			for k, e := range v {
				if err := CheckVisible(k, nil); err != nil {
					return err
				}
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(v)
}

// CheckXML fails b if it is not XML, or if a text or attribute it holds fails CheckVisible.
func CheckXML(b []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			for _, a := range t.Attr {
				if err := CheckVisible(a.Value, nil); err != nil {
					return fmt.Errorf("attribute %s: %w", a.Name.Local, err)
				}
			}
		case xml.CharData:
			if err := CheckVisible(string(t), nil); err != nil {
				return err
			}
		}
	}
}
