package tail

import (
	"strings"
	"testing"
)

// TestBuffer: the buffer keeps the last Size bytes, on one line.
func TestBuffer(t *testing.T) {
	var b Buffer
	b.Write([]byte(strings.Repeat("x", Size) + "\n"))
	b.Write([]byte("error:\n  disk\tfull\n"))
	got := b.String()
	if !strings.HasSuffix(got, "x error: disk full") || len(got) > Size {
		t.Errorf("String() = %q (%d bytes)", got, len(got))
	}
}
