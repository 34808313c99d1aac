package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// help is `shmdoctor help [command]`: the help of the check, or of the command named.
func help(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	switch {
	case len(args) == 0:
		return check(ctx, []string{"--help"}, stdin, stdout, stderr)
	case len(args) > 1:
		return exitUsage, usagef("help takes one command at most")
	}
	name := args[0]
	cmd, ok := subcommands[name]
	if !ok || hidden[name] {
		if name == "help" {
			return help(ctx, nil, stdin, stdout, stderr)
		}
		return exitUsage, usagef("help: unknown command %q%s", name, didYouMean(name, commandNames(), ""))
	}
	return cmd(ctx, []string{"--help"}, stdin, stdout, stderr)
}

// hidden are the commands no help lists: they are called by machines, not people.
var hidden = map[string]bool{"agent": true, pluginMetadataCommand: true}

// commandNames are the commands people type, sorted.
func commandNames() []string {
	names := []string{"help"}
	for n := range subcommands {
		if !hidden[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// mistypedCommand is a usage error when the first argument is no file or folder but
// reads like a command misspelt ("rule", "wacth"): without it, the doctor would look for
// a compose project of that name and say only that there is none.
func mistypedCommand(arg string) error {
	if arg == "" || strings.ContainsAny(arg, `-./\`) {
		return nil
	}
	if _, err := os.Lstat(arg); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if s := didYouMean(arg, commandNames(), ""); s != "" {
		return usagef("unknown command %q%s", arg, s)
	}
	return nil
}

// flagError adds the nearest flag to pflag's "unknown flag: --fial-on".
func flagError(fs *pflag.FlagSet, err error) error {
	const unknown = "unknown flag: --"
	msg := err.Error()
	if fs.Name() != "shmdoctor" {
		err = fmt.Errorf("%s: %w", fs.Name(), err) // which command's flags
	}
	if !strings.HasPrefix(msg, unknown) {
		return usagef("%v", err)
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	name, _, _ := strings.Cut(strings.TrimPrefix(msg, unknown), "=")
	return usagef("%v%s", err, didYouMean(name, names, "--"))
}

// didYouMean is ": did you mean X?" for the candidate nearest to s, when it is near enough
// to be a slip (an edit for every four letters, at most two) or s starts it; "" otherwise.
func didYouMean(s string, candidates []string, prefix string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := editDistance(s, c)
		if len(s) >= 3 && strings.HasPrefix(c, s) {
			d = 1
		}
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > min(2, max(1, len(s)/4)) {
		return ""
	}
	return "; did you mean " + prefix + best + "?"
}

// editDistance is the Damerau–Levenshtein distance (optimal string alignment): a swap of two
// neighbouring letters, the commonest slip, counts once.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// fitHelp lays a help text out for width columns. Paragraphs of prose (unindented lines)
// are joined and wrapped between words; an indented line too long (a command or an example
// with its comment, a list item) wraps under its description column, the text after its
// first run of two or more spaces, or else under its own indentation.
func fitHelp(s string, width int) string {
	lines := strings.Split(s, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l != "" && l[0] != ' ' {
			// a line ending in a colon ends its paragraph: a heading, or what a list
			// or an example below it continues
			para := []string{l}
			for !strings.HasSuffix(lines[i], ":") && i+1 < len(lines) && lines[i+1] != "" && lines[i+1][0] != ' ' {
				i++
				para = append(para, lines[i])
			}
			out = append(out, wrapAt(strings.Join(para, " "), "", 0, width)...)
			continue
		}
		lead := len(l) - len(strings.TrimLeft(l, " "))
		indent := lead
		if j := strings.Index(l[lead:], "  "); j >= 0 && !strings.Contains(l, "#") {
			k := lead + j
			for k < len(l) && l[k] == ' ' {
				k++
			}
			if k < width/2+10 {
				indent = k
			}
		}
		// the lines below at the description's column continue it
		text := l[indent:]
		for indent > lead && i+1 < len(lines) && strings.HasPrefix(lines[i+1], strings.Repeat(" ", indent)) && lines[i+1][indent] != ' ' {
			i++
			text += " " + lines[i][indent:]
		}
		if len([]rune(l)) <= width && text == l[indent:] {
			out = append(out, l)
			continue
		}
		out = append(out, wrapAt(text, l[:indent], indent, width)...)
	}
	return strings.Join(out, "\n")
}

// wrapAt breaks text between words into lines of at most width columns, the first after
// lead, the others after indent spaces.
func wrapAt(text, lead string, indent, width int) []string {
	var out []string
	line, n := lead, len([]rune(lead))
	fresh := true
	for _, w := range strings.Fields(text) {
		wn := len([]rune(w))
		if !fresh && n+1+wn > width {
			out = append(out, line)
			line, n, fresh = strings.Repeat(" ", indent), indent, true
		}
		if !fresh {
			line += " "
			n++
		}
		line += w
		n += wn
		fresh = false
	}
	return append(out, line)
}
