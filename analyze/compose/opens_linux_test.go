package compose

import (
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchOpens watches dir with inotify and returns a function that lists the files in it
// opened since: a read refused by its content or by its name alone would still show here.
func watchOpens(t *testing.T, dir string) func() []string {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		var opened []string
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if n <= 0 || err != nil {
				return opened
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				for len(name) > 0 && name[len(name)-1] == 0 {
					name = name[:len(name)-1]
				}
				opened = append(opened, filepath.Join(dir, string(name)))
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}
