package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/report"
)

// rulesCmd lists the catalogue: ID, default severity, name and title.
func rulesCmd(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) (int, error) {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprintln(stdout, fitHelp("Usage: shmdoctor rules\n\nLists every rule with its default severity. 'shmdoctor explain ID' prints one in full.", helpWidth))
			return exitClean, nil
		}
		return exitUsage, usagef("rules takes no arguments")
	}
	width := textWidth(stdout)
	rows := [][]string{{"ID", "SEVERITY", "NAME", "TITLE"}}
	for _, r := range rules.All {
		rows = append(rows, []string{r.ID, r.Severity.String(), r.Name, r.Title})
	}
	lines, fits := report.Table(rows, []int{3}, width)
	if !fits {
		// Too narrow for a title column beside the longest name: each title goes under
		// its rule, indented.
		head, _ := report.Table(columns(rows, 3), nil, width)
		lines = head[:1]
		for i, l := range head[1:] {
			lines = append(lines, l)
			lines = append(lines, report.Wrap("    ", report.Visible(rows[i+1][3]), width, 4)...)
		}
	}
	fmt.Fprintln(stdout, strings.Join(lines, "\n"))
	return exitClean, nil
}

// columns are the first n columns of rows.
func columns(rows [][]string, n int) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = r[:n]
	}
	return out
}

// explain prints one rule's documentation.
func explain(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) (int, error) {
	if len(args) != 1 || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 1 {
			fmt.Fprintln(stdout, fitHelp("Usage: shmdoctor explain RULE\n\nRULE is an ID (SHM020) or a name (ipc-host). Prints a rule's rationale, a problematic and a correct example, exceptions and sources.", helpWidth))
			return exitClean, nil
		}
		return exitUsage, usagef("explain takes one rule ID or name, such as SHM001 or ipc-host")
	}
	r := ruleNamed(args[0])
	if r == nil {
		return exitUsage, usagef("%s: no such rule (see shmdoctor rules)", args[0])
	}
	fmt.Fprint(stdout, fitMarkdown(RuleDoc(r), textWidth(stdout)))
	return exitClean, nil
}

// ruleNamed is the rule an argument names: by ID in any case (shm012), or by its name
// (ipc-host); nil when none.
func ruleNamed(s string) *analyze.Rule {
	if r := rules.ByID(strings.ToUpper(s)); r != nil {
		return r
	}
	return rules.ByName(strings.ToLower(s))
}

// RuleDoc renders a rule's documentation as Markdown: the text of explain and of docs/rules.
func RuleDoc(r *analyze.Rule) string { return r.Markdown() }

// fitMarkdown lays a rule's Markdown out for width columns, as the terminal shows it:
// paragraphs, headings and list items wrap between words (an item under its text); the
// lines of a code block are kept, but a comment that makes one too long goes on a line of
// its own above it, at its indentation. A word longer than a line (a URL) keeps a line
// of its own, unbroken, so that it can still be copied.
func fitMarkdown(md string, width int) string {
	var out []string
	code := false
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			code = !code
			out = append(out, l)
		case code:
			out = append(out, fitCode(l, width)...)
		case l == "":
			out = append(out, l)
		case strings.HasPrefix(l, "- "):
			out = append(out, report.Wrap("-", breakPaths(l[2:], width-2), width, 2)...)
		default:
			out = append(out, report.Wrap("", breakPaths(l, width), width, 0)...)
		}
	}
	return strings.Join(out, "\n")
}

// breakPaths breaks a path longer than a line (vllm/distributed/.../shm_broadcast.py)
// after a slash, so that its pieces fit; a URL stays whole, to be copied.
func breakPaths(text string, width int) string {
	words := strings.Split(text, " ")
	for i, w := range words {
		if utf8.RuneCountInString(w) <= width || strings.Contains(w, "://") || !strings.Contains(w, "/") {
			continue
		}
		var parts []string
		for utf8.RuneCountInString(w) > width {
			cut := strings.LastIndex(w[:width], "/")
			if cut <= 0 {
				break
			}
			parts, w = append(parts, w[:cut+1]), w[cut+1:]
		}
		words[i] = strings.Join(append(parts, w), " ")
	}
	return strings.Join(words, " ")
}

// fitCode fits a line of a YAML example: a trailing comment too long for the line goes
// above it, wrapped under its own "# "; a flow mapping or sequence too long wraps between
// its entries, indented under its key, which YAML reads the same.
func fitCode(l string, width int) []string {
	if utf8.RuneCountInString(l) <= width {
		return []string{l}
	}
	i := strings.Index(l, " # ")
	if i < 0 {
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if !strings.ContainsAny(l, "{[") {
			return []string{l}
		}
		return report.Wrap(l[:indent], strings.TrimSpace(l), width, indent+4)
	}
	body := strings.TrimRight(l[:i], " ")
	indent := len(body) - len(strings.TrimLeft(body, " "))
	lead := strings.Repeat(" ", indent) + "#"
	return append(report.Wrap(lead, strings.TrimSpace(l[i+3:]), width, indent+2), body)
}
