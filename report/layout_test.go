package report

import (
	"slices"
	"testing"

	"charm.land/lipgloss/v2"
)

// TestWordsKeepSizes: a size followed by punctuation stays one piece, as a bare one does.
func TestWordsKeepSizes(t *testing.T) {
	got := words("below 2.6 GiB: the need is 2.6 GiB. 24 MiB headroom")
	want := []string{"below", "2.6 GiB:", "the", "need", "is", "2.6 GiB.", "24 MiB headroom"}
	if !slices.Equal(got, want) {
		t.Errorf("words = %q, want %q", got, want)
	}
}

// TestLineCount: the count a table narrows its columns by is the number of lines the cell
// is then printed on.
func TestLineCount(t *testing.T) {
	texts := []string{"", "one", "a cell of several words, 2.6 GiB: sizes stay whole", "averyveryverylongwordwiderthanthecolumn and more", "écrit × → … ²"}
	for _, text := range texts {
		var widths []int
		for _, w := range words(text) {
			widths = append(widths, lipgloss.Width(w))
		}
		for width := 1; width <= 60; width++ {
			if got, want := lineCount(widths, width), len(wrapPlain(text, width)); got != want {
				t.Errorf("lineCount(%q, %d) = %d, wrapPlain makes %d lines", text, width, got, want)
			}
		}
	}
}
