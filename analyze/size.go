package analyze

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/docker/go-units"
)

// ParseSize parses a size the way compose-go parses shm_size and mem_limit ("2g", "512m",
// "128MiB", "1073741824"): binary units, as docker does.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	n, err := units.RAMInBytes(s)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: use a number with an optional unit such as 512m or 2g", s)
	}
	if n < 0 {
		return 0, fmt.Errorf("invalid size %q: must not be negative", s)
	}
	return n, nil
}

// parseTmpfsSize parses a tmpfs size= option as the kernel does: k, m, g suffixes are binary;
// a percentage of RAM depends on the host and gives ok=false.
func parseTmpfsSize(s string) (n int64, ok bool) {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" || strings.HasSuffix(s, "%") {
		return 0, false
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'k':
		mult = 1 << 10
	case 'm':
		mult = 1 << 20
	case 'g':
		mult = 1 << 30
	case 't':
		mult = 1 << 40
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v * mult, true
}

// FormatSize prints bytes for people: "64 MiB", "1.5 GiB", "100 B".
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	names := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(n)
	i := -1
	for v >= unit && i < len(names)-1 {
		v /= unit
		i++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + names[i]
}

// ComposeSize prints bytes as a compose value: "2g", "512m", or plain bytes.
func ComposeSize(n int64) string {
	switch {
	case n > 0 && n%(1<<30) == 0:
		return fmt.Sprintf("%dg", n>>30)
	case n > 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%dm", n>>20)
	case n > 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%dk", n>>10)
	}
	return strconv.FormatInt(n, 10)
}
