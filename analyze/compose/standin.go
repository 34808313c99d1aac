package compose

import (
	"os"
	"sync"
)

// standIns are files the doctor makes for compose-go to read in place of one it must not: an
// include refused or already loaded reads as an empty file, a refused extends file as one
// defining the extended service as nothing, a refused env file as an empty one, a compose
// file given as a FIFO as the bytes the doctor read from it. On Linux each is a memfd read
// through /proc/self/fd (nothing on disk); elsewhere a temporary file. Close removes them
// when the load ends.
type standIns struct {
	mu     sync.Mutex
	files  []*os.File
	byText map[string]string // content -> path
}

// path is a stand-in holding content, made once per content and load.
func (s *standIns) path(content string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.byText[content]; ok {
		return p, nil
	}
	f, p, err := newStandIn(content)
	if err != nil {
		return "", err
	}
	if s.byText == nil {
		s.byText = map[string]string{}
	}
	s.files = append(s.files, f)
	s.byText[content] = p
	return p, nil
}

// file is a stand-in in a temporary file, removed when the load ends: one that names a
// compose file the index keeps, for a reader after the load (a fix) to find it gone rather
// than whatever file took over the descriptor of a memfd.
func (s *standIns) file(content string) (string, error) {
	f, p, err := tempStandIn(content)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = append(s.files, f)
	return p, nil
}

// Close removes every stand-in.
func (s *standIns) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		removeStandIn(f)
	}
	s.files, s.byText = nil, nil
}

// tempStandIn is a stand-in in a temporary file, private to the user, removed by Close.
func tempStandIn(content string) (*os.File, string, error) {
	f, err := os.CreateTemp("", "shmdoctor-stand-in-*")
	if err != nil {
		return nil, "", err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, "", err
	}
	return f, f.Name(), nil
}
