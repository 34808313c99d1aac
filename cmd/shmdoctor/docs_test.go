package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocs holds README.md and docs/*.md to what the repository does, so that the pages
// cannot drift: every console block is what the doctor prints for its command (go test
// ./cmd/shmdoctor -run TestDocs -update rewrites them), every relative link and anchor
// resolves, every make target named exists, and every flag in a table of flags is one of the
// doctor's.
func TestDocs(t *testing.T) {
	t.Chdir(repoRoot(t))
	pages, _ := filepath.Glob("docs/*.md")
	pages = append([]string{"README.md"}, pages...)
	makefile := readText(t, "Makefile")
	_, help, _ := shmdoctor(t, "", "--help")
	for _, page := range pages {
		text := readText(t, page)
		t.Run(page, func(t *testing.T) {
			got := goldenBlocks(t, consoleBlocks(t, text))
			if got != text {
				if *update {
					if err := os.WriteFile(page, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				} else {
					t.Errorf("a console block of %s is not what the doctor prints (go test ./cmd/shmdoctor -run TestDocs -update rewrites it)", page)
				}
			}
			for _, l := range links.FindAllStringSubmatch(text, -1) {
				checkLink(t, page, l[1])
			}
			for _, m := range makeTarget.FindAllStringSubmatch(text, -1) {
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + `:`).MatchString(makefile) {
					t.Errorf("%s names make %s, which the Makefile does not have", page, m[1])
				}
			}
			for _, m := range flagRow.FindAllStringSubmatch(text, -1) {
				for _, f := range flagName.FindAllString(m[1], -1) {
					if !strings.Contains(help, f) {
						t.Errorf("%s lists %s, which --help does not", page, f)
					}
				}
			}
		})
	}
	if n := strings.Count(readText(t, "README.md"), "\n"); n > 250 {
		t.Errorf("README.md has %d lines: the rest belongs in docs/", n)
	}
}

var (
	links      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	makeTarget = regexp.MustCompile("`make ([a-z-]+)")
	flagRow    = regexp.MustCompile("(?m)^\\| (`--?[a-z][^|]*)\\|")
	flagName   = regexp.MustCompile(`--[a-z][a-z-]+`)
	heading    = regexp.MustCompile(`(?m)^#+ (.*)$`)
)

// consoleBlocks returns text with every console block's output replaced by what the doctor
// prints for the command above it: a line "$ shmdoctor ARGS" (words split at spaces), at 80
// columns without colour, from the repository's root.
func consoleBlocks(t *testing.T, text string) string {
	t.Helper()
	var out strings.Builder
	lines := strings.SplitAfter(text, "\n")
	for i := 0; i < len(lines); i++ {
		out.WriteString(lines[i])
		if strings.TrimSpace(lines[i]) != "```console" {
			continue
		}
		for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "```" {
			i++
			cmd := strings.TrimSuffix(lines[i], "\n")
			args, ok := strings.CutPrefix(cmd, "$ shmdoctor ")
			if !ok {
				t.Errorf("a console block holds %q where a $ shmdoctor command belongs", cmd)
				continue
			}
			_, stdout, _ := shmdoctor(t, "", strings.Fields(args)...)
			out.WriteString(lines[i] + stdout)
			for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") && strings.TrimSpace(lines[i+1]) != "```" {
				i++
			}
		}
	}
	return out.String()
}

// goldenBlocks returns text with the block after every "<!-- golden: PATH -->" line replaced
// by the content of PATH, a golden file a test of the repository writes.
func goldenBlocks(t *testing.T, text string) string {
	t.Helper()
	var out strings.Builder
	lines := strings.SplitAfter(text, "\n")
	for i := 0; i < len(lines); i++ {
		out.WriteString(lines[i])
		path, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "<!-- golden: ")
		if !ok || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			continue
		}
		i++
		out.WriteString(lines[i] + readText(t, strings.TrimSuffix(path, " -->")))
		for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "```" {
			i++
		}
	}
	return out.String()
}

// checkLink checks a link of page: a file of the repository, and a heading of it.
func checkLink(t *testing.T, page, target string) {
	t.Helper()
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return
	}
	file, anchor, _ := strings.Cut(target, "#")
	path := page
	if file != "" {
		path = filepath.Join(filepath.Dir(page), file)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Errorf("%s links to %s, which does not exist", page, target)
		return
	}
	if anchor == "" || st.IsDir() {
		return
	}
	var slugs []string
	for _, h := range heading.FindAllStringSubmatch(readText(t, path), -1) {
		slugs = append(slugs, slug(h[1]))
	}
	if !slices.Contains(slugs, anchor) {
		t.Errorf("%s links to %s, and %s has no heading #%s", page, target, path, anchor)
	}
}

// slug is GitHub's anchor of a heading: lowercased, punctuation dropped, spaces as dashes.
func slug(h string) string {
	h = strings.ToLower(h)
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
