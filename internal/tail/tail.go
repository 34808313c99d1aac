// Package tail keeps the end of what a child process writes: the agent's writer and the ssh
// command the engine dials through both report a failure with the last of their stderr.
package tail

import (
	"strings"
	"sync"
)

// Size is how many bytes a Buffer keeps.
const Size = 512

// Buffer keeps the last Size bytes written to it: a command's error, bounded whatever it
// prints. exec writes to it from its own goroutine.
type Buffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > Size {
		t.b = t.b[len(t.b)-Size:]
	}
	return len(p), nil
}

// String is what was written, on one line.
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(strings.Fields(string(t.b)), " ")
}
