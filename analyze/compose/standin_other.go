//go:build !linux

package compose

import "os"

func newStandIn(content string) (*os.File, string, error) { return tempStandIn(content) }

func removeStandIn(f *os.File) {
	_ = f.Close()
	_ = os.Remove(f.Name())
}
