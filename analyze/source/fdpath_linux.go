package source

import (
	"os"
	"path/filepath"
	"strconv"
)

// descriptorPath is the path the kernel keeps for an open file, through /proc/self/fd: the
// place it was opened at, every link on the way resolved. false when /proc is not there.
func descriptorPath(f *os.File) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || !filepath.IsAbs(p) {
		return "", false
	}
	return p, true
}
