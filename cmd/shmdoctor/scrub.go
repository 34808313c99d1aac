package main

import (
	"bytes"
	"io"
	"sync"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// scrubWriter passes what is written to w through the run's Secrets.Scrub, so that no value
// the loaders interpolated reaches standard output or standard error, whichever message
// quotes it. It holds back the last unfinished line: a value may be written in pieces, and Scrub
// must see it whole. A line ends at \n, or at \r, which progress lines redraw with.
type scrubWriter struct {
	mu      sync.Mutex
	w       io.Writer
	secrets *analyze.Secrets
	buf     []byte
}

// scrubFile is a scrubWriter on a file: terminal checks still see the file's descriptor.
type scrubFile struct {
	*scrubWriter
	fd uintptr
}

// Fd is the descriptor of the file written to.
func (f scrubFile) Fd() uintptr { return f.fd }

// scrubbed wraps w in a scrubWriter of secrets; flush writes what it still holds.
func scrubbed(w io.Writer, secrets *analyze.Secrets) (_ io.Writer, flush func() error) {
	s := &scrubWriter{w: w, secrets: secrets}
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		return scrubFile{s, f.Fd()}, s.flush
	}
	return s, s.flush
}

func (s *scrubWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) == 0 && !s.secrets.Scrubbing() {
		return s.w.Write(p)
	}
	s.buf = append(s.buf, p...)
	end := bytes.LastIndexAny(s.buf, "\n\r") + 1
	if end == 0 {
		return len(p), nil
	}
	_, err := s.w.Write(s.secrets.Scrub(s.buf[:end]))
	s.buf = append(s.buf[:0], s.buf[end:]...)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *scrubWriter) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.w.Write(s.secrets.Scrub(s.buf))
	s.buf = s.buf[:0]
	return err
}
