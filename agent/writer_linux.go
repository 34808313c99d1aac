//go:build linux

package agent

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// chunkSize is the unit of the write probe: one write(2), or one copy into the mapping.
const chunkSize = 1 << 20

// writerMain is the child the agent re-executes to write into /dev/shm. It reports progress
// and its result as JSON lines on fd 3. It raises its own oom_score_adj first, so that when
// the memory cgroup runs out the kernel kills it rather than the agent.
func writerMain(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent write", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", "write", "write or mmap")
	target := fs.Int64("target", 0, "bytes to write")
	path := fs.String("path", "/dev/shm", "directory to write into")
	workers := fs.Int("workers", min(runtime.NumCPU(), 4), "parallel writers")
	budget := fs.Duration("budget", 0, "stop after this long (0: no limit)")
	floor := fs.Int64("mem-floor", DefaultMemFloor, "stop when the host's MemAvailable falls below this many bytes (0: never)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	progress := os.NewFile(3, "progress")
	if progress == nil {
		fmt.Fprintln(stderr, "agent write: fd 3 (progress) is not open")
		return 2
	}
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)

	rep := newProgressWriter(progress)
	var res writerLine
	start := time.Now()
	c := newClaimer(*target, *floor)
	if *budget > 0 {
		c.deadline = start.Add(*budget)
	}
	switch *mode {
	case "write":
		res = writeFiles(*path, c, max(*workers, 1), rep)
	case "mmap":
		res = touchMapping(*path, c, max(*workers, 1), rep)
	default:
		fmt.Fprintf(stderr, "agent write: --mode %q: want write or mmap\n", *mode)
		return 2
	}
	if low := c.lowMem.Load(); res.Outcome == analyze.WriteOK && low > 0 {
		res.Outcome, res.Stopped = analyze.WriteSkipped, true
		res.Reason = fmt.Sprintf("stopped after %s of %s: the host's available memory fell to %s, below the floor of %s (--mem-floor)",
			analyze.FormatSize(rep.written.Load()), analyze.FormatSize(*target), analyze.FormatSize(low-1), analyze.FormatSize(*floor))
	} else if res.Outcome == analyze.WriteOK && c.outOfTime.Load() {
		res.Outcome, res.Stopped = analyze.WriteSkipped, true
		res.Reason = fmt.Sprintf("stopped by the time budget (%s) after %s of %s", budget.Round(time.Millisecond), analyze.FormatSize(rep.written.Load()), analyze.FormatSize(*target))
	}
	end := time.Now()
	if w := c.written.Load(); w > 0 {
		end = time.Unix(0, w)
	}
	res.Nanos = end.Sub(start).Nanoseconds()
	rep.finish(res)
	return 0
}

// progressInterval is how often the writer reports its running total: a kill at any point
// leaves the parent with the bytes written up to this long before it (a few MiB), without
// a wake-up per chunk competing with the writers for the CPU.
const progressInterval = time.Millisecond

// progressWriter sends the running total every progressInterval while it changes.
type progressWriter struct {
	mu      sync.Mutex
	enc     *json.Encoder
	written atomic.Int64
	done    chan struct{}
	stopped chan struct{}
}

func newProgressWriter(w io.Writer) *progressWriter {
	p := &progressWriter{enc: json.NewEncoder(w), done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(p.stopped)
		tick := time.NewTicker(progressInterval)
		defer tick.Stop()
		var sent int64
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
				if n := p.written.Load(); n != sent {
					p.send(writerLine{Bytes: n})
					sent = n
				}
			}
		}
	}()
	return p
}

func (p *progressWriter) add(n int64) { p.written.Add(n) }

// finish stops the ticker and sends the result, which carries the final total.
func (p *progressWriter) finish(res writerLine) {
	close(p.done)
	<-p.stopped
	p.send(res)
}

func (p *progressWriter) send(l writerLine) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.enc.Encode(l)
}

// openUnlinked creates a file in dir that has no name: O_TMPFILE where the filesystem
// supports it, else a fresh name unlinked right after creation.
func openUnlinked(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return os.NewFile(uintptr(fd), filepath.Join(dir, "(unlinked)")), nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := filepath.Join(dir, ".shmdoctor-probe-"+hex.EncodeToString(b[:]))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(name); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func openFailure(err error) writerLine {
	if errors.Is(err, unix.ENOSPC) {
		return writerLine{Outcome: analyze.WriteENOSPC, Reason: "no space left to create a file"}
	}
	return writerLine{Outcome: analyze.WriteSkipped, Reason: "cannot create a file: " + err.Error()}
}

// claimer hands out chunk offsets below target to parallel workers until told to stop or
// the deadline passes.
type claimer struct {
	next      atomic.Int64
	target    int64
	deadline  time.Time
	stop      atomic.Bool
	outOfTime atomic.Bool
	// floor: no chunk is claimed while the host's MemAvailable is below it (0: no check);
	// lowMem is 1 + the MemAvailable that stopped the writers, 0 while none did.
	floor  int64
	lowMem atomic.Int64
	// memNext is when MemAvailable is due to be read again (unix nanoseconds).
	memNext atomic.Int64
	// written is when the last writer finished writing (unix nanoseconds): the clock stops
	// there, before the files are closed, because freeing the tmpfs pages of a closed
	// unlinked file is not writing (dd's own rate never includes it either).
	written atomic.Int64
}

// newClaimer returns a claimer of target bytes that stops at the memory floor. It reads
// MemAvailable once before any worker claims: on a host already below the floor no chunk is
// written (later readings are shared by the workers, and one that loses the race to read
// would otherwise write a chunk before the reading stops them).
func newClaimer(target, floor int64) *claimer {
	c := &claimer{target: target, floor: floor}
	if floor <= 0 {
		return c
	}
	mem := newMemReader()
	defer mem.close()
	if avail, ok := mem.available(); ok && avail < floor {
		c.lowMem.Store(avail + 1)
		c.stop.Store(true)
	}
	c.memNext.Store(time.Now().UnixNano() + int64(memCheckEvery))
	return c
}

// doneWriting records that a writer has written its last byte.
func (c *claimer) doneWriting() {
	now := time.Now().UnixNano()
	for {
		last := c.written.Load()
		if now <= last || c.written.CompareAndSwap(last, now) {
			return
		}
	}
}

// claim hands out the next chunk. mem is the calling worker's own /proc/meminfo reader: the
// host's available memory is read again before a chunk whenever memCheckEvery has passed
// since the last reading by any worker, so that concurrent doctors (or any other load) stop
// the writers at the floor instead of the OOM killer stopping someone.
// memCheckEvery is the least time between two readings of MemAvailable by the writers. A
// reading of /proc/meminfo costs about as much as writing a chunk (reading it before every
// chunk made the write probe 1.37 times slower, BenchmarkWriterMemFloor); at the writers'
// highest rate, a few GB/s, this lets a few MiB through between two readings, far below
// any floor.
const memCheckEvery = 2 * time.Millisecond

// memDue reports whether this worker is the one to read MemAvailable now.
func (c *claimer) memDue() bool {
	now := time.Now().UnixNano()
	next := c.memNext.Load()
	return now >= next && c.memNext.CompareAndSwap(next, now+int64(memCheckEvery))
}

func (c *claimer) claim(mem *memReader) (off, n int64, ok bool) {
	if c.stop.Load() {
		return 0, 0, false
	}
	if c.floor > 0 && mem != nil && c.memDue() {
		if avail, ok := mem.available(); ok && avail < c.floor {
			c.lowMem.CompareAndSwap(0, avail+1)
			c.stop.Store(true)
			return 0, 0, false
		}
	}
	if !c.deadline.IsZero() && time.Now().After(c.deadline) {
		c.outOfTime.Store(true)
		return 0, 0, false
	}
	off = c.next.Add(chunkSize) - chunkSize
	if off >= c.target {
		return 0, 0, false
	}
	return off, min(chunkSize, c.target-off), true
}

// writeFiles writes target bytes with write(2) in 1 MiB chunks, each worker into its own
// unlinked file (tmpfs serialises writers of one file), until the target or ENOSPC.
func writeFiles(dir string, c *claimer, workers int, p *progressWriter) writerLine {
	var mu sync.Mutex
	var failure *writerLine
	fail := func(l writerLine) {
		mu.Lock()
		defer mu.Unlock()
		if failure == nil {
			failure = &l
		}
		c.stop.Store(true)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			f, err := openUnlinked(dir)
			if err != nil {
				fail(openFailure(err))
				return
			}
			defer f.Close()
			defer c.doneWriting() // runs before the Close above
			buf := pattern()
			mem := newMemReader()
			defer mem.close()
			for {
				_, n, ok := c.claim(mem)
				if !ok {
					return
				}
				m, err := f.Write(buf[:n])
				if m > 0 {
					p.add(int64(m))
				}
				if err != nil {
					if errors.Is(err, unix.ENOSPC) {
						fail(writerLine{Outcome: analyze.WriteENOSPC, Reason: "write(2) failed with ENOSPC: no space left on device"})
					} else {
						fail(writerLine{Outcome: analyze.WriteSkipped, Reason: "write(2) failed: " + err.Error()})
					}
					return
				}
			}
		})
	}
	wg.Wait()
	res := writerLine{Outcome: analyze.WriteOK}
	if failure != nil {
		res = *failure
	}
	res.Bytes = p.written.Load()
	return res
}

// touchMapping maps an unlinked file truncated to target and copies 1 MiB chunks into it.
// Past the filesystem's size the kernel raises SIGBUS on the faulting page; with
// debug.SetPanicOnFault the fault becomes a panic this goroutine recovers from.
func touchMapping(dir string, c *claimer, workers int, p *progressWriter) writerLine {
	target := min(c.target, math.MaxInt)
	c.target = target
	f, err := openUnlinked(dir)
	if err != nil {
		return openFailure(err)
	}
	defer f.Close()
	if err := f.Truncate(target); err != nil {
		return writerLine{Outcome: analyze.WriteSkipped, Reason: "ftruncate: " + err.Error()}
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(target), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return writerLine{Outcome: analyze.WriteSkipped, Reason: "mmap: " + err.Error()}
	}
	defer unix.Munmap(data)

	var faulted atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			buf := pattern()
			mem := newMemReader()
			defer mem.close()
			for {
				off, n, ok := c.claim(mem)
				if !ok {
					return
				}
				done, ok := copyCatchingFault(data[off:off+n], buf[:n])
				if done > 0 {
					p.add(int64(done))
				}
				if !ok {
					faulted.Store(true)
					c.stop.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	res := writerLine{Outcome: analyze.WriteOK, Bytes: p.written.Load()}
	if faulted.Load() {
		res.Outcome = analyze.WriteSIGBUS
		res.Reason = "touching a mapped page raised SIGBUS: the filesystem is full"
	}
	return res
}

// copyCatchingFault copies src into dst and returns how many bytes landed before a fault
// (rounded down to the page) and whether the copy completed.
func copyCatchingFault(dst, src []byte) (done int, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		fault, isFault := r.(interface{ Addr() uintptr })
		if !isFault {
			panic(r)
		}
		base := uintptr(unsafe.Pointer(unsafe.SliceData(dst)))
		if a := fault.Addr(); a >= base && a < base+uintptr(len(dst)) {
			page := uintptr(os.Getpagesize())
			done = int((a - base) / page * page)
		}
		ok = false
	}()
	// Prefault the chunk's pages in one call where the kernel can (5.14+): a fault per 4 KiB
	// page from user space costs several times the copy. Where populating fails (EFAULT: the
	// access would raise SIGBUS) the copy below takes the real fault.
	_ = unix.Madvise(dst, unix.MADV_POPULATE_WRITE)
	copy(dst, src)
	return len(dst), true
}

func pattern() []byte {
	buf := make([]byte, chunkSize)
	for i := range buf {
		buf[i] = byte(0xa5 ^ i)
	}
	return buf
}

// memReader reads MemAvailable from /proc/meminfo through one open descriptor: a pread at
// offset 0 regenerates the file, without an open and close per chunk.
type memReader struct {
	f   *os.File
	buf []byte
}

func newMemReader() *memReader {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return nil
	}
	return &memReader{f: f, buf: make([]byte, 4096)}
}

func (m *memReader) close() {
	if m != nil {
		m.f.Close()
	}
}

// available is MemAvailable in bytes; ok is false when it cannot be read.
func (m *memReader) available() (int64, bool) {
	if m == nil {
		return 0, false
	}
	n, err := m.f.ReadAt(m.buf, 0)
	if n == 0 && err != nil {
		return 0, false
	}
	return parseMemAvailable(m.buf[:n])
}
