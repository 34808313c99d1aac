//go:build !unix

package main

import (
	"errors"
	"os"
)

// fileIdentity is unknown here: no owner to keep (-1), and one link.
func fileIdentity(os.FileInfo) (uid, gid int, links uint64) { return -1, -1, 1 }

// writeFD is never called here: ownFD names are Unix paths.
func writeFD(int, []byte) error { return errors.ErrUnsupported }
