package report

import "charm.land/lipgloss/v2"

// Wrap lays text out in lines of at most width columns, breaking at spaces only, as the
// text report does: the first line starts with lead (a space follows it unless it is
// blank), the others with indent spaces. A word longer than a line (a URL) gets a line of
// its own, unbroken. The caller escapes what came from the input (Visible).
func Wrap(lead, text string, width, indent int) []string {
	return wrapWords(lead, text, width, indent, lipgloss.NewStyle())
}

// Table aligns rows of plain text into columns two spaces apart, the first row a header,
// as the text report's service table: when it is wider than width, the columns in wrap
// break their cells between words, never below their longest word. fits reports whether
// the table holds in width. Cells are escaped as Visible escapes them.
func Table(rows [][]string, wrap []int, width int) (lines []string, fits bool) {
	cells := make([][]cell, len(rows))
	for i, r := range rows {
		cells[i] = plainCells(r...)
	}
	w := map[int]bool{}
	for _, c := range wrap {
		w[c] = true
	}
	return layoutTable(cells, w, 0, width, lipgloss.NewStyle())
}
