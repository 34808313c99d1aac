package analyze

import (
	"testing"
)

func TestSizes(t *testing.T) {
	const mib, gib = 1 << 20, 1 << 30
	for in, want := range map[string]int64{"512m": 512 * mib, "2g": 2 * gib, "16GB": 16 * gib, "128MiB": 128 * mib, "65536k": 64 * mib, "1048576": mib, "1.5GiB": 3 * gib / 2, "0": 0} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1", "12q", "16 gigs"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): want an error", in)
		}
	}
	for n, want := range map[int64]string{64 * mib: "64 MiB", 3 * gib / 2: "1.5 GiB", 512: "512 B", 24683620 << 10: "23.5 GiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %s, want %s", n, got, want)
		}
	}
	for n, want := range map[int64]string{2 * gib: "2g", 512 * mib: "512m", 1536 * mib: "1536m", 1000: "1000"} {
		if got := ComposeSize(n); got != want {
			t.Errorf("ComposeSize(%d) = %s, want %s", n, got, want)
		}
	}
	for in, want := range map[string]int64{"256m": 256 * mib, "1G": gib, "65536k": 64 * mib, "1024": 1024} {
		if got, ok := ParseTmpfsSize(in); !ok || got != want {
			t.Errorf("parseTmpfsSize(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"50%", "", "x"} {
		if _, ok := ParseTmpfsSize(in); ok {
			t.Errorf("parseTmpfsSize(%q): want not ok", in)
		}
	}
	for n, want := range map[int64]int64{1: 128 * mib, 200 * mib: 256 * mib, gib: gib, 2*gib + 1: 3 * gib} {
		if got := Friendly(n); got != want {
			t.Errorf("friendly(%d) = %d, want %d", n, got, want)
		}
	}
}
