package engine

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// fileIdentity names the file fi describes as it is now: device, inode, size, and the
// modification and change times to the nanosecond. Whatever writes to a file, or replaces it,
// moves its change time, which no one can set back (utimes moves it too). changed is the later
// of the two times.
func fileIdentity(fi os.FileInfo) (id string, changed time.Time, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", time.Time{}, false
	}
	mtime, ctime := time.Unix(st.Mtim.Unix()), time.Unix(st.Ctim.Unix())
	changed = mtime
	if ctime.After(changed) {
		changed = ctime
	}
	id = fmt.Sprintf("%d:%d:%d:%d.%09d:%d.%09d", st.Dev, st.Ino, st.Size,
		st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	return id, changed, true
}
