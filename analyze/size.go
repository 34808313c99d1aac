package analyze

import (
	"fmt"
	"math"
	"regexp"
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

// ParseTmpfsSize parses a tmpfs size= option as the kernel does: k, m, g suffixes are binary;
// a percentage of RAM depends on the host and gives ok=false.
func ParseTmpfsSize(s string) (n int64, ok bool) {
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

var quantity = regexp.MustCompile(`^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E))?$`)

// ParseQuantity parses a Kubernetes resource quantity as bytes: "512Mi", "2Gi", "1G",
// "1.5Gi", "129e6", "1073741824". Fractions of a byte round up, as the API server does.
func ParseQuantity(s string) (int64, error) {
	m := quantity.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("invalid quantity %q: use a number with an optional suffix such as 512Mi or 2Gi", s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid quantity %q: use a positive number with an optional suffix such as 512Mi or 2Gi", s)
	}
	if m[2] != "" {
		e, _ := strconv.Atoi(m[2][1:])
		v *= math.Pow10(e)
	}
	mult := map[string]float64{
		"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
		"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60,
	}[m[3]]
	v = math.Ceil(v * mult)
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("invalid quantity %q: too large", s)
	}
	return int64(v), nil
}

// K8sSize prints bytes as a Kubernetes quantity: "2Gi", "512Mi", or plain bytes.
func K8sSize(n int64) string {
	switch {
	case n > 0 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGi", n>>30)
	case n > 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMi", n>>20)
	case n > 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKi", n>>10)
	}
	return strconv.FormatInt(n, 10)
}
