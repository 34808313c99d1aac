//go:build linux

package engine

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agentCopy writes a copy of the test agent with a tail of its own (the loader ignores it).
func agentCopy(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(testAgent)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "shmdoctor")
	if err := os.WriteFile(bin, append(data, randomTail()...), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func randomTail() []byte {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return []byte(hex.EncodeToString(b[:]))
}

// rewriteTail writes a new tail into the file in place, keeping its size, inode and
// modification time, until its change time moves: a file written twice within one tick of
// the kernel's clock looks the same both times, which is what racyAge is about.
func rewriteTail(t *testing.T, name string) []byte {
	t.Helper()
	before, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	old := before.Sys().(*syscall.Stat_t).Ctim
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for {
		tail := randomTail()
		if _, err := f.WriteAt(tail, before.Size()-int64(len(tail))); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(name, before.ModTime(), before.ModTime()); err != nil {
			t.Fatal(err)
		}
		after, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) || !os.SameFile(before, after) {
			t.Fatalf("the rewrite changed more than the bytes: %v, %v", before, after)
		}
		if after.Sys().(*syscall.Stat_t).Ctim != old {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
		runtime.Gosched()
	}
}

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// settleFiles makes every file count as settled (changed racyAge before now) for this test.
func settleFiles(t *testing.T) {
	saved := digestClock
	digestClock = func() time.Time { return time.Now().Add(racyAge + time.Minute) }
	t.Cleanup(func() {
		digestClock = saved
		forgetAgents()
	})
}

func mustAgent(t *testing.T, bin string) *Agent {
	t.Helper()
	a, err := SelectAgent(bin, "linux", runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAgentKeyFollowsBytes: the image key of a binary rewritten in place, with the same size,
// inode and modification time, is the digest of its new bytes, whether or not the digest of
// the old ones was recorded; a binary changed a moment ago is not recorded, and an unchanged
// one is not read again.
func TestAgentKeyFollowsBytes(t *testing.T) {
	bin := agentCopy(t)
	data, _ := os.ReadFile(bin)
	a := mustAgent(t, bin)
	if a.digest != sha(data) || a.ref() != ImageRepository+":"+sha(data)[:12] {
		t.Fatalf("digest %s, ref %s; want the sha256 of the bytes, %s", a.digest, a.ref(), sha(data))
	}
	// Just written, within racyAge: nothing recorded, and the rewrite is seen at once.
	if key, _ := identityKey(bin, statOf(t, bin), nil); recordedDigest(bin, key) != "" {
		t.Error("the digest of a binary written a moment ago was recorded")
	}
	data = rewriteTail(t, bin)
	if a := mustAgent(t, bin); a.digest != sha(data) {
		t.Errorf("after a rewrite of the same size and time: digest %s, want %s", a.digest, sha(data))
	}

	// As for a binary built a while ago: its digest is recorded, then taken without a read.
	settleFiles(t)
	forgetAgents()
	if a := mustAgent(t, bin); a.digest != sha(data) || a.data == nil {
		t.Fatalf("first run: digest %s (want %s), read %d bytes", a.digest, sha(data), len(a.data))
	}
	if key, _ := identityKey(bin, statOf(t, bin), nil); recordedDigest(bin, key) != sha(data) {
		t.Fatalf("the digest of a settled binary was not recorded")
	}
	forgetAgents()
	if a := mustAgent(t, bin); a.digest != sha(data) || a.data != nil {
		t.Fatalf("next run: digest %s (want %s), read %d bytes; want the record and no read", a.digest, sha(data), len(a.data))
	}
	// Rebuilt in place, same size and time: the record does not fit any more, in this process
	// or in the next.
	data = rewriteTail(t, bin)
	if a := mustAgent(t, bin); a.digest != sha(data) {
		t.Errorf("after a rewrite, same process: digest %s, want %s", a.digest, sha(data))
	}
	data = rewriteTail(t, bin)
	forgetAgents()
	if a := mustAgent(t, bin); a.digest != sha(data) {
		t.Errorf("after a rewrite, next process: digest %s, want %s", a.digest, sha(data))
	}
	// The image holds the bytes the key names.
	forgetAgents()
	a = mustAgent(t, bin)
	if files, err := a.files(); err != nil || !bytes.Equal(files[0].data, data) {
		t.Errorf("image files of a recorded agent: %v", err)
	}
}

// TestAgentKeyLibraries: a dynamically linked agent's key changes with the bytes of any of
// its libraries, rewritten in place like the binary.
func TestAgentKeyLibraries(t *testing.T) {
	settleFiles(t)
	bin := agentCopy(t)
	lib := agentCopy(t) // any bytes do as a library here
	digest := func() string {
		t.Helper()
		f, err := os.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		libs := []imageFile{{path: "/lib/libtest.so.1", src: lib, info: statOf(t, lib)}}
		d, _, _, err := localDigest(bin, f, statOf(t, bin), libs)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	binData, _ := os.ReadFile(bin)
	want := func(libData []byte) string {
		return agentDigest(binData, []imageFile{{path: "/lib/libtest.so.1", data: libData}})
	}
	libData, _ := os.ReadFile(lib)
	if d := digest(); d != want(libData) {
		t.Fatalf("digest %s, want %s", d, want(libData))
	}
	forgetAgents()
	if d := digest(); d != want(libData) {
		t.Fatalf("recorded digest %s, want %s", d, want(libData))
	}
	libData = rewriteTail(t, lib)
	if d := digest(); d != want(libData) {
		t.Errorf("after the library's rewrite: digest %s, want %s", d, want(libData))
	}
}

// TestAgentKeyWrongRecord: should a record name other bytes than the file's (a filesystem
// whose times do not move), the image is not made from them, and the record goes.
func TestAgentKeyWrongRecord(t *testing.T) {
	settleFiles(t)
	bin := agentCopy(t)
	data, _ := os.ReadFile(bin)
	mustAgent(t, bin)
	dir, _, err := lockDir()
	if err != nil {
		t.Fatal(err)
	}
	rec := digestFile(dir, bin)
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatalf("no record: %v", err)
	}
	var e digestEntry
	if err := json.Unmarshal(b, &e); err != nil || e.Digest != sha(data) || e.Binary != bin {
		t.Fatalf("record %s: %v", b, err)
	}
	e.Digest = sha([]byte("other bytes"))
	b, _ = json.Marshal(e)
	if err := os.WriteFile(rec, b, 0o600); err != nil {
		t.Fatal(err)
	}
	forgetAgents()
	a := mustAgent(t, bin)
	if a.digest != e.Digest {
		t.Fatalf("digest %s; want the record's, %s", a.digest, e.Digest)
	}
	if _, err := a.files(); err == nil || !strings.Contains(err.Error(), "changed while the doctor read it") {
		t.Errorf("image files from bytes the key does not name: %v", err)
	}
	if _, err := os.Stat(rec); !os.IsNotExist(err) {
		t.Errorf("the wrong record stays: %v", err)
	}
	if a := mustAgent(t, bin); a.digest != sha(data) {
		t.Errorf("after the wrong record went: digest %s, want %s", a.digest, sha(data))
	}
}

// TestAgentKeyPrunes: recording a digest removes the records of binaries that are gone.
func TestAgentKeyPrunes(t *testing.T) {
	settleFiles(t)
	gone := agentCopy(t)
	mustAgent(t, gone)
	dir, _, err := lockDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(digestFile(dir, gone)); err != nil {
		t.Fatalf("no record: %v", err)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	kept := agentCopy(t)
	mustAgent(t, kept)
	if _, err := os.Stat(digestFile(dir, gone)); !os.IsNotExist(err) {
		t.Errorf("the record of a binary that is gone stays: %v", err)
	}
	if _, err := os.Stat(digestFile(dir, kept)); err != nil {
		t.Errorf("the new record: %v", err)
	}
}

func statOf(t *testing.T, name string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}
