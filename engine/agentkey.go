package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
)

// The probe image is named by the sha256 of the agent's bytes, and of its libraries' for a
// dynamically linked agent, so that a doctor never runs an image that holds another agent.
// Reading and hashing a doctor binary (12 to 18 MB) costs every run 15 to 30 ms of CPU, so
// the digest of a local agent is kept in the per-user lock directory (lockDir), under the
// identity of the files it was computed from (fileIdentity): path, device, inode, size,
// modification and change times. A run whose files have the identity recorded takes the
// digest and reads none of their bytes unless it must import the image, and the import
// checks the bytes it reads against the digest.
//
// The Go build ID would have been cheaper to read, but it does not change with every byte:
// bytes appended to the binary, strip(1) or patchelf leave it as it was, a build with
// -ldflags=-buildid= has none, and other build systems set their own.

// racyAge is how long after a file's last change its digest is first recorded. A file written
// twice within one tick of the filesystem's clock (the kernel's coarse clock, whole seconds on
// some filesystems) shows the same identity both times, so the digest of a file that changed
// shortly before it was read is not recorded, as git does not trust an index entry as new as
// the index itself.
var racyAge = 3 * time.Second

// digestClock is the time that racyAge is counted from; tests move it.
var digestClock = time.Now

// digests holds the digests this process computed or read, by identity key.
var digests sync.Map // key → digest

// embeddedDigests holds the digest of each embedded agent, by platform: embedded bytes do not
// change while the process runs.
var embeddedDigests sync.Map // platform → digest

// agentDigest is the hex sha256 naming the image of an agent and its libraries.
func agentDigest(data []byte, libs []imageFile) string {
	h := sha256.New()
	h.Write(data)
	for _, l := range libs {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", l.path, len(l.data))
		h.Write(l.data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// identityPrefix starts every identity key. The agent protocol's version takes part: a digest
// recorded by a doctor of another protocol is never taken for this one's, even for the same
// files.
var identityPrefix = fmt.Sprintf("shmdoctor agent digest 1 protocol %d", protocol.Version)

// identityKey is the key of a local agent's digest: the identity of the binary and of each
// library; ok is false when one of them gives none.
func identityKey(binary string, bin os.FileInfo, libs []imageFile) (key string, ok bool) {
	var b strings.Builder
	b.WriteString(identityPrefix)
	add := func(path string, fi os.FileInfo) bool {
		if fi == nil {
			return false
		}
		id, _, ok := fileIdentity(fi)
		fmt.Fprintf(&b, "\x00%s\x00%s", path, id)
		return ok
	}
	if !add(binary, bin) {
		return "", false
	}
	for _, l := range libs {
		if !add(l.path, l.info) {
			return "", false
		}
	}
	return b.String(), true
}

// settled reports whether every file was last changed racyAge or more before start.
func settled(start time.Time, files ...os.FileInfo) bool {
	for _, fi := range files {
		_, changed, ok := fileIdentity(fi)
		if !ok || !changed.Before(start.Add(-racyAge)) {
			return false
		}
	}
	return true
}

// localDigest gives the digest of the agent at binary (open as f, described by fi) and its
// libraries: the recorded one when their identity is the recorded one, else the digest of
// their bytes, which it then returns too (data, libs with their bytes) and records when the
// files have settled.
func localDigest(binary string, f *os.File, fi os.FileInfo, libs []imageFile) (digest string, data []byte, read []imageFile, err error) {
	key, ok := identityKey(binary, fi, libs)
	if ok {
		if d, hit := digests.Load(key); hit {
			return d.(string), nil, libs, nil
		}
		if d := recordedDigest(binary, key); d != "" {
			digests.Store(key, d)
			return d, nil, libs, nil
		}
	}
	start := digestClock()
	data, fi, err = readOpen(f)
	if err != nil {
		return "", nil, nil, fmt.Errorf("reading the agent binary: %w", err)
	}
	infos := []os.FileInfo{fi}
	read = make([]imageFile, len(libs))
	for i, l := range libs {
		if read[i], err = readLibraryFile(l); err != nil {
			return "", nil, nil, err
		}
		infos = append(infos, read[i].info)
	}
	digest = agentDigest(data, read)
	if key, ok := identityKey(binary, fi, read); ok && settled(start, infos...) {
		digests.Store(key, digest)
		recordDigest(binary, key, digest)
	}
	return digest, data, read, nil
}

// readOpen reads the whole of f from its start, and what it is now.
func readOpen(f *os.File) ([]byte, os.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), fi, nil
}

// readLibraryFile reads a library of the agent's, from the file it was found at.
func readLibraryFile(l imageFile) (imageFile, error) {
	f, err := os.Open(l.src)
	if err != nil {
		return imageFile{}, fmt.Errorf("reading %s: %w", l.src, err)
	}
	defer f.Close()
	data, fi, err := readOpen(f)
	if err != nil {
		return imageFile{}, fmt.Errorf("reading %s: %w", l.src, err)
	}
	return imageFile{path: l.path, src: l.src, info: fi, data: data}, nil
}

// digestEntry is the record of one binary's digest in the lock directory.
type digestEntry struct {
	Binary string `json:"binary"`
	Key    string `json:"key"`
	Digest string `json:"digest"`
}

// digestFile is where the digest of the agent at binary is recorded: one file a path, which
// the record of a rebuilt binary at that path replaces.
func digestFile(dir, binary string) string {
	sum := sha256.Sum256([]byte(binary))
	return filepath.Join(dir, "agent-"+hex.EncodeToString(sum[:8])+".json")
}

// recordedDigest reads the digest recorded for binary under key; "" without one.
func recordedDigest(binary, key string) string {
	dir, _, err := lockDir()
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(digestFile(dir, binary))
	if err != nil {
		return ""
	}
	var e digestEntry
	if json.Unmarshal(b, &e) != nil || e.Binary != binary || e.Key != key || !isDigest(e.Digest) {
		return ""
	}
	return e.Digest
}

func isDigest(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size
}

// recordDigest records the digest of binary, whole or not at all, and removes the records of
// binaries that are gone (the temporary builds of tests, go run).
func recordDigest(binary, key, digest string) {
	dir, _, err := lockDir()
	if err != nil {
		return
	}
	b, _ := json.Marshal(digestEntry{Binary: binary, Key: key, Digest: digest})
	tmp, err := os.CreateTemp(dir, ".agent-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err != nil || cerr != nil {
		return
	}
	name := digestFile(dir, binary)
	if os.Rename(tmp.Name(), name) != nil {
		return
	}
	others, _ := filepath.Glob(filepath.Join(dir, "agent-*.json"))
	for _, p := range others {
		if p == name {
			continue
		}
		var e digestEntry
		if b, err := os.ReadFile(p); err == nil && json.Unmarshal(b, &e) == nil && e.Binary != "" {
			if _, err := os.Lstat(e.Binary); !errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
		_ = os.Remove(p)
	}
}

// forgetDigest removes what is recorded of binary's digest, in this process and on disk.
func forgetDigest(binary string) {
	digests.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), identityPrefix+"\x00"+binary+"\x00") {
			digests.Delete(k)
		}
		return true
	})
	if dir, _, err := lockDir(); err == nil {
		_ = os.Remove(digestFile(dir, binary))
	}
}

// files returns the files of the agent's image with their bytes, reading those that
// selecting the agent did not read, and checks that they are the bytes its digest names.
func (a *Agent) files() ([]imageFile, error) {
	data, libs := a.data, a.libs
	if data == nil {
		var err error
		switch {
		case a.embedded:
			data, err = embeddedAgent(a.platform)
			if err == nil && data == nil {
				err = fmt.Errorf("no embedded %s agent", a.platform)
			}
		default:
			data, err = os.ReadFile(a.from)
			if err != nil {
				err = fmt.Errorf("reading the agent binary: %w", err)
			}
			libs = make([]imageFile, len(a.libs))
			for i, l := range a.libs {
				if err == nil {
					libs[i], err = readLibraryFile(l)
				}
			}
		}
		if err != nil {
			return nil, err
		}
		if agentDigest(data, libs) != a.digest {
			if a.embedded {
				return nil, fmt.Errorf("the embedded %s agent is not the one its digest names", a.platform)
			}
			forgetDigest(a.from)
			return nil, fmt.Errorf("%s changed while the doctor read it: run it again", a.from)
		}
	}
	return append([]imageFile{{path: agentPath, data: data}}, libs...), nil
}
