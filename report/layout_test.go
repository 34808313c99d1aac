package report

import (
	"slices"
	"testing"
)

// TestWordsKeepSizes: a size followed by punctuation stays one piece, as a bare one does.
func TestWordsKeepSizes(t *testing.T) {
	got := words("below 2.6 GiB: the need is 2.6 GiB. 24 MiB headroom")
	want := []string{"below", "2.6 GiB:", "the", "need", "is", "2.6 GiB.", "24 MiB headroom"}
	if !slices.Equal(got, want) {
		t.Errorf("words = %q, want %q", got, want)
	}
}
