//go:build linux

package agent

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
)

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// tailBuffer keeps the last 512 bytes written to it: a command's error, bounded whatever it
// prints. exec writes to it from its own goroutine.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 512 {
		t.b = t.b[len(t.b)-512:]
	}
	return len(p), nil
}

// String is what was written, on one line.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(strings.Fields(string(t.b)), " ")
}

// parseMemAvailable reads MemAvailable out of /proc/meminfo's text, in bytes.
func parseMemAvailable(b []byte) (int64, bool) {
	i := bytes.Index(b, []byte("MemAvailable:"))
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+len("MemAvailable:"):])
	if len(f) == 0 {
		return 0, false
	}
	kb, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, false
	}
	return kb << 10, true
}
