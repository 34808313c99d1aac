//go:build linux

package agent

import (
	"bytes"
	"os"
	"strconv"
)

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
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
