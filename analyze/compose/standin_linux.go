package compose

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// newStandIn writes content to a memfd, read as /proc/self/fd/N while it is open; without
// memfds or /proc, a temporary file.
func newStandIn(content string) (*os.File, string, error) {
	fd, err := unix.MemfdCreate("shmdoctor-stand-in", unix.MFD_CLOEXEC)
	if err != nil {
		return tempStandIn(content)
	}
	f := os.NewFile(uintptr(fd), "shmdoctor-stand-in")
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return tempStandIn(content)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != content {
		f.Close()
		return tempStandIn(content)
	}
	return f, p, nil
}

func removeStandIn(f *os.File) {
	if f.Name() != "shmdoctor-stand-in" {
		_ = os.Remove(f.Name())
	}
	_ = f.Close()
}
