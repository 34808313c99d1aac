//go:build linux

package watch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/enginetest"
)

func TestParseDf(t *testing.T) {
	cases := map[string]struct {
		out        string
		size, used int64
	}{
		"busybox": {"Filesystem           1024-blocks    Used Available Capacity Mounted on\nshm                     262144    102400    159744  39% /dev/shm\n", 256 << 20, 100 << 20},
		"gnu":     {"Filesystem     1024-blocks  Used Available Capacity Mounted on\nshm                  65536     0     65536       0% /dev/shm\n", 64 << 20, 0},
	}
	for name, c := range cases {
		size, used, err := parseDf(c.out)
		if err != nil || size != c.size || used != c.used {
			t.Errorf("%s: %d, %d, %v; want %d, %d", name, size, used, err, c.size, c.used)
		}
	}
	for _, bad := range []string{"", "Filesystem 1024-blocks Used Available Capacity Mounted on\n", "h\nshm x y z 0% /dev/shm\n"} {
		if _, _, err := parseDf(bad); err == nil {
			t.Errorf("parseDf(%q): no error", bad)
		}
	}
}

// TestParseShmem reads the stats document of a cgroup v2 engine. It is written out here
// because the engine these tests run on is cgroup v1, whose stats carry no shmem: that the
// counter is absent there is checked against the real engine by TestWatchStatsShmem.
func TestParseShmem(t *testing.T) {
	v2 := `{"memory_stats":{"usage":123,"stats":{"anon":4096,"file":8192,"shmem":50331648,"file_mapped":0}}}`
	if n, ok, err := parseShmem(strings.NewReader(v2)); err != nil || !ok || n != 48<<20 {
		t.Errorf("v2: %d, %v, %v", n, ok, err)
	}
	v1 := `{"memory_stats":{"usage":123,"stats":{"cache":104857600,"rss":57344,"total_cache":104857600}}}`
	if _, ok, err := parseShmem(strings.NewReader(v1)); err != nil || ok {
		t.Errorf("v1: ok %v, err %v; want no shmem", ok, err)
	}
	if _, _, err := parseShmem(strings.NewReader("{")); err == nil {
		t.Errorf("a broken document gives no error")
	}
}

// TestAgentWatch runs the agent's watch mode on this machine: one line per interval with
// the filesystem's size and use, and it ends when its standard input ends.
func TestAgentWatch(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(testAgent, append(append([]string{"agent", "watch"}, protocol.Args()...), "--path", dir, "--interval", "50ms", "--every", "10ms")...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for i := 0; i < 3; i++ {
		if !sc.Scan() {
			t.Fatalf("line %d: %v", i+1, sc.Err())
		}
		var l protocol.WatchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Error != "" || l.SizeBytes <= 0 || l.PeakBytes < l.UsedBytes {
			t.Errorf("line %q: %+v, %v", sc.Text(), l, err)
		}
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("agent watch after end of input: %v", err)
		}
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("agent watch still runs after its standard input ended")
	}

	// Standard input stays open (a pipe nobody closes) until --count lines are out.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	one := exec.Command(testAgent, append(append([]string{"agent", "watch"}, protocol.Args()...), "--path", dir+"/none", "--interval", "20ms", "--count", "1")...)
	one.Stdin = r
	out, err := one.Output()
	r.Close()
	var l protocol.WatchLine
	if err != nil || json.Unmarshal(out, &l) != nil || !strings.Contains(l.Error, "no such file") {
		t.Errorf("a missing path: %s, %v", out, err)
	}
}

// holdingAgent starts the test agent in a container that holds its /dev/shm for 60s, with
// these labels and host settings, and removes it when the test ends.
func holdingAgent(t *testing.T, c *client.Client, labels map[string]string, hc *container.HostConfig) string {
	t.Helper()
	ctx := context.Background()
	image, err := engine.Image(ctx, c, testAgent)
	if err != nil {
		t.Fatal(err)
	}
	return enginetest.Start(t, c, client.ContainerCreateOptions{
		Config:     &container.Config{Image: image, Cmd: append(protocol.Args(), "--target", "0", "--hold", "60s"), Labels: labels},
		HostConfig: hc,
	})
}

// replicaLabels are the labels of replica number of service app in a compose project.
func replicaLabels(project string, number int) map[string]string {
	return map[string]string{
		engine.LabelProbe: "watch", engine.LabelProject: project,
		ComposeProjectLabel: project, ComposeServiceLabel: "app", ComposeNumberLabel: fmt.Sprint(number), ComposeOneoffLabel: "False",
	}
}

// TestWatchStatsShmem asks the real engine for a container's stats: a cgroup v2 engine
// reports shmem, a cgroup v1 engine (Docker's conversion of v1 stats keeps a fixed set of
// keys) does not, and watch must then read /dev/shm another way.
func TestWatchStatsShmem(t *testing.T) {
	o := testOptions(t)
	c := daemon(t)
	ctx := context.Background()
	id := holdingAgent(t, c, map[string]string{engine.LabelProbe: "stats", engine.LabelProject: o.Project}, &container.HostConfig{NetworkMode: "none"})
	info, err := c.Info(ctx, client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, ok, err := containerShmem(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := info.Info.CgroupVersion == "2"; ok != want {
		t.Errorf("cgroup v%s: shmem reported %v (%d), want %v", info.Info.CgroupVersion, ok, n, want)
	}
}

// TestWatchFollows watches two containers labelled as one compose service's replicas, one of
// which joins the other's IPC namespace: both are read by their companions, the shared
// /dev/shm is one group, and nothing is left behind.
func TestWatchFollows(t *testing.T) {
	o := testOptions(t)
	c := daemon(t)
	ctx := context.Background()
	project := o.Project
	var ids []string
	for i, ipc := range []string{"shareable", ""} {
		hc := &container.HostConfig{NetworkMode: "none", IpcMode: container.IpcMode(ipc), ShmSize: 32 << 20}
		if ipc == "" {
			hc.IpcMode = container.IpcMode("container:" + ids[0])
		}
		ids = append(ids, holdingAgent(t, c, replicaLabels(project, i+1), hc))
	}
	samples := 0
	// The companions carry the watch's run lock, held while the watch lives.
	var lock, stuck string
	var lockWhileWatching engine.LockState
	cs, err := Watch(ctx, c, Options{Project: project, Interval: 100 * time.Millisecond, Duration: 3 * time.Second, Binary: testAgent,
		OnSample: func(analyze.WatchSample) {
			samples++
			if lock != "" {
				return
			}
			f := make(client.Filters).Add("label", engine.LabelWatch+"="+ids[0])
			if list, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f}); err == nil && len(list.Items) > 0 {
				lock = list.Items[0].Labels[engine.LabelRunLock]
				lockWhileWatching = engine.StateOf(lock)
				// A companion of this watch stuck in Created, as a failed start leaves one: the
				// watch removes it when it ends.
				stuck = leftoverLabelled(t, map[string]string{engine.LabelWatch: ids[0], engine.LabelRunLock: lock})
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if lock == "" || lockWhileWatching != engine.LockAlive || engine.StateOf(lock) != engine.LockDead {
		t.Errorf("companion's run lock %q: %v while watching, %v after, want held then free", lock, lockWhileWatching, engine.StateOf(lock))
	}
	if _, err := os.Stat(lock); err == nil {
		t.Errorf("the watch's lock file %s is still there", lock)
	}
	if stuck == "" || exists(t, stuck) {
		t.Errorf("the companion stuck in Created (%q) is still there after the watch", stuck)
	}
	if len(cs) != 2 || samples < 10 {
		t.Fatalf("%d containers, %d samples", len(cs), samples)
	}
	for _, w := range cs {
		if w.Method != analyze.WatchAgent || w.SizeBytes == nil || *w.SizeBytes != 32<<20 || w.Samples == 0 {
			t.Errorf("%s: method %q, size %v, %d samples", w.Name, w.Method, w.SizeBytes, w.Samples)
		}
	}
	if cs[1].SharesWith != cs[0].Name || cs[0].SharesWith != "" {
		t.Errorf("shares: %q and %q, want the second to share the first's", cs[0].SharesWith, cs[1].SharesWith)
	}
	f := make(client.Filters).Add("label", engine.LabelWatch)
	list, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if s.Labels[engine.LabelWatch] == ids[0] || s.Labels[engine.LabelWatch] == ids[1] {
			t.Errorf("companion left behind: %v", s.Names)
		}
	}
}

// cgroupV2Engine is the real engine, except that it says it runs cgroup v2: a fake, because
// this machine's engine runs cgroup v1 and watch prefers the stats API only under v2. Its
// stats carry no shmem counter, as on a v2 engine that does not report it.
type cgroupV2Engine struct{ engine.Client }

func (e cgroupV2Engine) Info(ctx context.Context, o client.InfoOptions) (client.SystemInfoResult, error) {
	res, err := e.Client.Info(ctx, o)
	res.Info.CgroupVersion = "2"
	return res, err
}

// companionLines is cgroupV2Engine, and it closes read once the doctor has read a whole
// line from a container it attached to: the companion's first reading, an event a test
// waits on.
type companionLines struct {
	cgroupV2Engine
	read chan struct{}
	once *sync.Once
}

func (e companionLines) ContainerAttach(ctx context.Context, id string, o client.ContainerAttachOptions) (client.ContainerAttachResult, error) {
	res, err := e.cgroupV2Engine.ContainerAttach(ctx, id, o)
	if err == nil && res.Reader != nil {
		res.Reader = bufio.NewReader(lineSignal{r: res.Reader, line: func() { e.once.Do(func() { close(e.read) }) }, st: &frameState{}})
	}
	return res, err
}

// lineSignal calls line once a newline has passed through it in a frame's payload: the
// attach stream is multiplexed, 8 bytes of header (the stream, then the payload's size, big
// endian, in bytes 4 to 7) before each payload.
type lineSignal struct {
	r    io.Reader
	line func()
	st   *frameState
}

type frameState struct {
	header  [8]byte
	got     int   // header bytes read of the current frame
	payload int64 // payload bytes left in the current frame
}

func (l lineSignal) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		st := l.st
		if st.payload == 0 {
			c := copy(st.header[st.got:], b)
			st.got += c
			b = b[c:]
			if st.got == len(st.header) {
				st.got, st.payload = 0, int64(binary.BigEndian.Uint32(st.header[4:]))
			}
			continue
		}
		c := int(min(st.payload, int64(len(b))))
		if bytes.IndexByte(b[:c], '\n') >= 0 {
			l.line()
		}
		st.payload -= int64(c)
		b = b[c:]
	}
	return n, err
}

// TestWatchStatsFallback watches, through an engine whose stats lack shmem, with one sample
// only (an interval longer than the watch): the group moves to the agent at that sample, and
// its companion must start then, not at a next sample. The watch ends once the doctor has
// read the companion's first line: the end of a watch waits for a line read to be recorded.
func TestWatchStatsFallback(t *testing.T) {
	o := testOptions(t)
	c := daemon(t)
	ctx := context.Background()
	holdingAgent(t, c, replicaLabels(o.Project, 1), &container.HostConfig{NetworkMode: "none"})
	e := companionLines{cgroupV2Engine{c}, make(chan struct{}), &sync.Once{}}
	wctx, cancel := context.WithCancel(ctx)
	lined := make(chan bool, 1)
	go func() {
		defer cancel()
		select {
		case <-e.read:
			lined <- true
		case <-time.After(time.Minute):
			lined <- false
		}
	}()
	cs, err := Watch(wctx, e, Options{Project: o.Project, Interval: time.Hour, Binary: testAgent})
	if err != nil {
		t.Fatal(err)
	}
	if !<-lined {
		t.Error("no companion wrote a line within a minute")
	}
	if len(cs) != 1 || cs[0].Method != analyze.WatchAgent || cs[0].UsedBytes == nil {
		t.Fatalf("%+v: want it read by the agent after the stats fell short", cs)
	}
}

// TestWatchMethod: auto reads stats only where the engine runs cgroup v2, and asking for
// stats of a cgroup v1 engine (this one) is an error that says what to use instead.
func TestWatchMethod(t *testing.T) {
	c := daemon(t)
	for _, tc := range []struct {
		engine engine.Client
		method string
		want   analyze.WatchMethod
		err    string
	}{
		{c, "auto", analyze.WatchAgent, ""},
		{cgroupV2Engine{c}, "auto", analyze.WatchStats, ""},
		{c, "stats", "", "needs cgroup v2"},
		{cgroupV2Engine{c}, "stats", analyze.WatchStats, ""},
		{c, "df", analyze.WatchDf, ""},
		{c, "guess", "", "invalid watch method"},
	} {
		w := newWatcher(tc.engine, Options{Method: tc.method}, nil)
		err := w.chooseMethod(context.Background())
		if w.method != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%T %s: method %q, error %v; want %q, %q", tc.engine, tc.method, w.method, err, tc.want, tc.err)
		}
	}
}
