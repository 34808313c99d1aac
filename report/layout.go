package report

import (
	"slices"
	"strings"

	"charm.land/lipgloss/v2"
)

// DefaultWidth is the width the text formats are laid out for when the caller knows none:
// the classic terminal, which CI logs and code review panes also hold to.
const DefaultWidth = 80

// minWidth is the narrowest layout: below it the hanging indents would leave no room.
const minWidth = 40

// width is o.Width, or DefaultWidth when unset, never below minWidth.
func (o Options) width() int {
	if o.Width <= 0 {
		return DefaultWidth
	}
	return max(o.Width, minWidth)
}

// wrapWords lays text out in lines of at most width columns, breaking at spaces only: the
// first line starts with lead (which may be styled; a space follows it unless it is blank),
// the others with indent spaces. A word longer than a line (a path, a URL) gets a line of
// its own, unbroken, so that it can still be copied, starting left of the indent when that
// keeps it within width. Each word is rendered with style.
func wrapWords(lead, text string, width, indent int, style lipgloss.Style) []string {
	var lines []string
	line, lineW := lead, lipgloss.Width(lead)
	content := strings.TrimSpace(lead) != ""
	for _, word := range words(text) {
		w := lipgloss.Width(word)
		sep := 0
		if content {
			sep = 1
		}
		if content && lineW+sep+w > width {
			lines = append(lines, line)
			// A word too long for the indent (a URL) starts earlier rather than wrap.
			at := max(0, min(indent, width-w))
			line, lineW, sep = strings.Repeat(" ", at), at, 0
		}
		line += strings.Repeat(" ", sep) + style.Render(word)
		lineW += sep + w
		content = true
	}
	return append(lines, line)
}

// wrapPlain breaks text at spaces into lines of at most width columns, for a table cell.
// Each word is measured once: a table narrows its columns by trying every width.
func wrapPlain(text string, width int) []string {
	var lines []string
	var line string
	lineW := 0
	for _, word := range words(text) {
		w := lipgloss.Width(word)
		switch {
		case line == "":
			line, lineW = word, w
		case lineW+1+w <= width:
			line, lineW = line+" "+word, lineW+1+w
		default:
			lines = append(lines, line)
			line, lineW = word, w
		}
	}
	return append(lines, line)
}

// lineCount is the number of lines wrapPlain breaks words of these widths into.
func lineCount(widths []int, width int) int {
	lines, lineW := 1, -1
	for _, w := range widths {
		if lineW >= 0 && lineW+1+w > width {
			lines, lineW = lines+1, -1
		}
		lineW += 1 + w
	}
	return lines
}

// units are the words that stay on the line of the word before them: a size or a speed
// read across two lines is misread, and "24 MiB headroom" or "create failed" is one verdict.
var units = map[string]bool{"failed": true, "B": true, "KiB": true, "MiB": true, "GiB": true, "TiB": true, "GB/s": true, "headroom": true}

// words splits text at spaces into the pieces a line may break between: a size stays one
// piece ("2.2 GiB", "2.2 GiB:"), and "@" goes with what follows.
func words(text string) []string {
	var out []string
	glue := false
	for _, w := range strings.Fields(text) {
		if len(out) > 0 && (glue || units[strings.TrimRight(w, ".,:;)")]) {
			out[len(out)-1] += " " + w
		} else {
			out = append(out, w)
		}
		glue = w == "@"
	}
	return out
}

// longestWord is the width of the widest word of text: a cell is never narrower.
func longestWord(text string) int {
	n := 0
	for _, w := range words(text) {
		n = max(n, lipgloss.Width(w))
	}
	return n
}

// cell is one table cell: its text and how it is styled. The text of a column that wraps
// is plain, so that it breaks between words and each line keeps the style. The text is
// escaped as Visible escapes it when the table is laid out, unless it is the renderer's own.
type cell struct {
	text  string
	style lipgloss.Style
	keep  bool // never wrapped, even in a column that wraps (a bar)
	own   bool // drawn and styled by the renderer (a bar): not escaped
}

// visibleCells are rows with the text of each cell escaped, but the renderer's own.
func visibleCells(rows [][]cell) [][]cell {
	out := make([][]cell, len(rows))
	for i, r := range rows {
		out[i] = slices.Clone(r)
		for j := range out[i] {
			if !out[i][j].own {
				out[i][j].text = Visible(out[i][j].text)
			}
		}
	}
	return out
}

func plainCells(ss ...string) []cell {
	out := make([]cell, len(ss))
	for i, s := range ss {
		out[i] = cell{text: s}
	}
	return out
}

// layoutTable aligns rows into columns two spaces apart, each line starting with indent
// spaces. When the table is wider than width, the columns in wrap break their cells
// between words, the widest first, never below their longest word: nothing a cell says is
// cut. fits reports whether the table holds in width. The first row is the header, in
// the header style.
func layoutTable(rows [][]cell, wrap map[int]bool, indent, width int, header lipgloss.Style) (lines []string, fits bool) {
	byRow, fits := layoutRows(rows, wrap, indent, width, header)
	return slices.Concat(byRow...), fits
}

// layoutRows is layoutTable with the lines of each row apart.
func layoutRows(rows [][]cell, wrap map[int]bool, indent, width int, header lipgloss.Style) (byRow [][]string, fits bool) {
	rows = visibleCells(rows)
	n := len(rows[0])
	widths, minw := make([]int, n), make([]int, n)
	for r, row := range rows {
		for i, c := range row {
			w := lipgloss.Width(c.text)
			widths[i] = max(widths[i], w)
			if wrap[i] && r > 0 && !c.keep {
				w = longestWord(c.text)
			}
			minw[i] = max(minw[i], w)
		}
	}
	total := func() int {
		t := indent + 2*(n-1)
		for _, w := range widths {
			t += w
		}
		return t
	}
	// Each cell's words are measured once: the loop below tries every width.
	wordWidths := make([][][]int, len(rows))
	for r, row := range rows {
		wordWidths[r] = make([][]int, n)
		for i, c := range row {
			for _, w := range words(c.text) {
				wordWidths[r][i] = append(wordWidths[r][i], lipgloss.Width(w))
			}
		}
	}
	// Narrow one column by one at a time: the one that adds the fewest lines to the table,
	// the widest of those; a row whose cells wrap in two columns costs its lines once.
	height := func() int {
		h := 0
		for r, row := range rows[1:] {
			rh := 1
			for i, c := range row {
				if wrap[i] && !c.keep {
					rh = max(rh, lineCount(wordWidths[r+1][i], widths[i]))
				}
			}
			h += rh
		}
		return h
	}
	for total() > width {
		best, lowest := -1, 0
		for i := range widths {
			if !wrap[i] || widths[i] <= minw[i] {
				continue
			}
			widths[i]--
			h := height()
			widths[i]++
			if best < 0 || h < lowest || h == lowest && widths[i] > widths[best] {
				best, lowest = i, h
			}
		}
		if best < 0 {
			break
		}
		widths[best]--
	}
	fits = total() <= width
	for r, row := range rows {
		var lines []string
		cells := make([][]string, n)
		height := 1
		for i, c := range row {
			cells[i] = []string{c.text}
			if wrap[i] && !c.keep && lipgloss.Width(c.text) > widths[i] {
				cells[i] = wrapPlain(c.text, widths[i])
			}
			height = max(height, len(cells[i]))
		}
		for k := range height {
			var b strings.Builder
			b.WriteString(strings.Repeat(" ", indent))
			for i, c := range row {
				var s string
				if k < len(cells[i]) {
					s = cells[i][k]
				}
				pad := widths[i] - lipgloss.Width(s)
				if s != "" {
					s = c.style.Render(s)
				}
				b.WriteString(s)
				if i < n-1 {
					b.WriteString(strings.Repeat(" ", max(0, pad)+2))
				}
			}
			line := strings.TrimRight(b.String(), " ")
			if r == 0 {
				line = strings.Repeat(" ", indent) + header.Render(strings.TrimLeft(line, " "))
			}
			lines = append(lines, line)
		}
		byRow = append(byRow, lines)
	}
	return byRow, fits
}

// RuleURL is the page of a rule's documentation, docs/rules/ID.md in the project's
// repository: the text report ends each finding with it and SARIF names it as the help.
func RuleURL(id string) string { return ruleDocsURI + id + ".md" }
