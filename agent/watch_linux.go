//go:build linux

package agent

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
)

// watchMain is `shmdoctor agent watch`: the companion of `shmdoctor watch`. It prints one
// protocol.WatchLine per --interval with the size and use of the filesystem at --path (the watched
// container's /dev/shm seen through /proc/PID/root), sampling every --every in between so
// that a spike shorter than the interval still shows in the line's peak. A sample above
// every peak reported before is also written at once, as a rise line (the first reading
// among them, so the doctor learns at once whether it can read).
//
// It ends on end of standard input: the doctor holds the other end, so the agent ends with
// the doctor however the doctor ends, even when it is killed. It also ends on SIGTERM and
// SIGINT, after --count lines when that is set, and when the watched container's PID
// namespace goes away, as every process in it does.
func watchMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("path", "/dev/shm", "directory whose filesystem is measured")
	interval := fs.Duration("interval", time.Second, "time between two lines")
	every := fs.Duration("every", 50*time.Millisecond, "time between two samples within a line")
	count := fs.Int("count", 0, "stop after this many lines (0: never)")
	proto := fs.Int(protocol.Flag, 0, "the doctor's protocol version (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !checkProtocol(*proto, stderr) {
		return protocol.ExitProtocol
	}
	if *interval <= 0 || *every <= 0 {
		fmt.Fprintln(stderr, "agent watch: --interval and --every must be positive")
		return 2
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(done)
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	enc := json.NewEncoder(stdout)
	step := min(*every, *interval)
	tick := time.NewTicker(step)
	defer tick.Stop()
	line := sampleShm(*path)
	next := time.Now().Add(*interval)
	// The highest use reported so far: a sample above it is written at once (a rise line),
	// so that the doctor keeps it even when the container ends before the interval's line.
	reported := int64(-1)
	rise := func(s protocol.WatchLine) error {
		if s.Error != "" || s.UsedBytes <= reported {
			return nil
		}
		reported = s.UsedBytes
		s.Rise = true
		return enc.Encode(s)
	}
	if rise(line) != nil {
		return 1
	}
	for n := 0; ; {
		select {
		case <-done:
			return 0
		case <-sigs:
			return 0
		case now := <-tick.C:
			s := sampleShm(*path)
			line = line.Merge(s)
			if now.Before(next) {
				if rise(s) != nil {
					return 1 // the doctor is gone
				}
				continue
			}
			if line.Error == "" {
				reported = max(reported, line.PeakBytes)
			}
			next = next.Add(*interval)
			if now.After(next) {
				next = now.Add(*interval) // the machine was suspended or starved
			}
			if err := enc.Encode(line); err != nil {
				return 1 // the doctor is gone
			}
			n++
			if *count > 0 && n >= *count {
				return 0
			}
			line = s
		}
	}
}

// sampleShm measures one filesystem once.
func sampleShm(path string) protocol.WatchLine {
	var s unix.Statfs_t
	if err := unix.Statfs(path, &s); err != nil {
		return protocol.WatchLine{Protocol: protocol.Version, Error: fmt.Sprintf("statfs %s: %v", path, err)}
	}
	unit := int64(s.Frsize)
	if unit == 0 {
		unit = int64(s.Bsize)
	}
	size := int64(s.Blocks) * unit
	used := (int64(s.Blocks) - int64(s.Bfree)) * unit
	return protocol.WatchLine{Protocol: protocol.Version, SizeBytes: size, UsedBytes: used, PeakBytes: used}
}
