//go:build unix

package main

import (
	"os"
	"syscall"
)

// fileIdentity is a file's owner, group and number of hard links.
func fileIdentity(st os.FileInfo) (uid, gid int, links uint64) {
	sys := st.Sys().(*syscall.Stat_t)
	return int(sys.Uid), int(sys.Gid), uint64(sys.Nlink)
}

// writeFD writes data to one of the process's descriptors, which it leaves open.
func writeFD(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := syscall.Write(fd, data)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}
