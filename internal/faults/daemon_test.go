//go:build faults

package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// memoryLimit caps the memory cgroup every container of the private daemon runs under (its
// --cgroup-parent): whatever a probe writes, the host keeps the rest.
const memoryLimit int64 = 3 << 30

// daemon is the suite's private dockerd: its own socket, data root, exec root, pidfile,
// config file (holding {}), managed containerd (state under the exec root, its own
// namespace), cgroup parent, and mount and network namespaces (unshare), so that neither its
// mounts nor its bridge nor its iptables rules reach the machine.
type daemon struct {
	dir    string // everything it owns lives here, removed at the end
	sock   string
	cgroup string // absolute cgroup parent, /shmdoctor-faults-XXXX
	ns     string // containerd namespace
	netns  string // network namespace (ip netns), kept across restarts
	api    *client.Client

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

// newDaemon prepares the private daemon's folder and memory cgroup and starts it.
func newDaemon() (*daemon, error) {
	// A short path: the sockets of dockerd and containerd must fit in sun_path.
	dir, err := os.MkdirTemp("", "shmdf-")
	if err != nil {
		return nil, err
	}
	suffix := strings.ToLower(strings.TrimPrefix(filepath.Base(dir), "shmdf-"))
	d := &daemon{dir: dir, sock: filepath.Join(dir, "docker.sock"), cgroup: "/shmdoctor-faults-" + suffix, ns: "shmdoctor-faults-" + suffix}
	// Its own network namespace, one for the suite: dockerd started with --bridge none
	// deletes any interface named docker0 it sees, the machine engine's bridge included.
	// The same namespace across restarts, because the shims of containers that outlive a
	// killed dockerd listen on abstract sockets, which belong to a network namespace.
	if out, err := exec.Command("ip", "netns", "add", "shmdf-"+suffix).CombinedOutput(); err != nil {
		return d, fmt.Errorf("creating a network namespace: %v: %s", err, out)
	}
	d.netns = "shmdf-" + suffix
	if out, err := exec.Command("ip", "-n", d.netns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return d, fmt.Errorf("bringing up lo in the network namespace: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o644); err != nil {
		return d, err
	}
	// The doctor reads no docker CLI configuration of the machine (contexts).
	if err := os.Mkdir(filepath.Join(dir, "dockercfg"), 0o755); err != nil {
		return d, err
	}
	if err := d.limitMemory(); err != nil {
		return d, err
	}
	if d.log, err = os.Create(filepath.Join(dir, "dockerd.log")); err != nil {
		return d, err
	}
	if d.api, err = client.New(client.WithHost("unix://"+d.sock), client.WithAPIVersionNegotiation()); err != nil {
		return d, err
	}
	return d, d.start()
}

// limitMemory creates the cgroup parent's memory cgroup with memoryLimit before dockerd puts
// the first container under it (runc creates the other controllers' folders itself).
func (d *daemon) limitMemory() error {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil { // cgroup v2
		p := filepath.Join("/sys/fs/cgroup", d.cgroup)
		if err := os.Mkdir(p, 0o755); err != nil {
			return fmt.Errorf("creating the cgroup %s: %w", p, err)
		}
		return os.WriteFile(filepath.Join(p, "memory.max"), []byte(strconv.FormatInt(memoryLimit, 10)), 0o644)
	}
	p := filepath.Join("/sys/fs/cgroup/memory", d.cgroup)
	if err := os.Mkdir(p, 0o755); err != nil {
		return fmt.Errorf("creating the memory cgroup %s: %w", p, err)
	}
	return os.WriteFile(filepath.Join(p, "memory.limit_in_bytes"), []byte(strconv.FormatInt(memoryLimit, 10)), 0o644)
}

func (d *daemon) host() string { return "unix://" + d.sock }

// start starts dockerd and returns once it logs that its API listens, or with the end of its
// log when it exits or does not listen within a minute.
func (d *daemon) start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	// In the suite's network namespace, with its own mount namespace; --bridge none, no
	// iptables, no ip forwarding.
	args := []string{"--net=/run/netns/" + d.netns, "--", "unshare", "--mount", "--propagation", "private", "--", "dockerd",
		"--host", d.host(),
		"--data-root", filepath.Join(d.dir, "data"),
		"--exec-root", filepath.Join(d.dir, "exec"),
		"--pidfile", filepath.Join(d.dir, "docker.pid"),
		"--config-file", filepath.Join(d.dir, "daemon.json"),
		"--containerd-namespace", d.ns,
		"--containerd-plugins-namespace", d.ns + "-plugins",
		"--cgroup-parent", d.cgroup,
		"--storage-driver", "vfs",
		"--bridge", "none", "--iptables=false", "--ip-masq=false", "--ip-forward=false",
	}
	cmd := exec.Command("nsenter", args...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	// Its own process group, so that a Ctrl-C of make reaches the suite, which stops it; and
	// a SIGTERM if the suite dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Stdout = d.log
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting dockerd: %w", err)
	}
	ready, exited := make(chan struct{}), make(chan struct{})
	listening := "API listen on " + d.sock
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(d.log, line)
			if strings.Contains(line, listening) {
				once.Do(func() { close(ready) })
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(exited)
	}()
	d.cmd, d.exited = cmd, exited
	select {
	case <-ready:
		return nil
	case <-exited:
		return fmt.Errorf("dockerd exited at start: %s", d.logTail())
	case <-time.After(time.Minute):
		return fmt.Errorf("dockerd did not listen within a minute: %s", d.logTail())
	}
}

// logTail is the end of dockerd's log, for errors.
func (d *daemon) logTail() string {
	b, _ := os.ReadFile(d.log.Name())
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.Contains(l, "module=grpc") {
			lines = append(lines, l)
		}
	}
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.Join(lines, "\n")
}

// signal sends sig to dockerd (nsenter and unshare execute it in place: same process).
func (d *daemon) signal(sig syscall.Signal) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil || d.cmd.Process == nil {
		return errors.New("dockerd is not running")
	}
	return syscall.Kill(d.cmd.Process.Pid, sig)
}

// alive reports whether dockerd is running.
func (d *daemon) alive() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.exited == nil {
		return false
	}
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs dockerd and waits until it is gone, and its managed containerd too: dockerd
// starts it with a parent-death signal, and a restarted dockerd that still finds it alive
// waits for it instead of starting its own. The shims of running containers stay.
func (d *daemon) kill() error {
	containerd := d.containerdPid()
	if err := d.signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		return errors.New("dockerd did not die within 30s of SIGKILL")
	}
	if containerd > 0 {
		_ = syscall.Kill(containerd, syscall.SIGKILL)
		// Not a child of the suite: its end is seen in /proc, a moment after the signal.
		deadline := time.Now().Add(30 * time.Second)
		for processExists(containerd) {
			if time.Now().After(deadline) {
				return fmt.Errorf("the private containerd (pid %d, alive: %v) was not reaped within 30s of dockerd's death", containerd, processAlive(containerd))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// containerdPid is the pid of the daemon's managed containerd, 0 when it has none; only a
// process whose command line names the daemon's folder counts.
func (d *daemon) containerdPid() int {
	b, err := os.ReadFile(filepath.Join(d.dir, "exec", "containerd", "containerd.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), d.dir+"/") {
		return 0
	}
	return pid
}

// processExists reports whether pid is still in the process table, a zombie included: a
// restarted dockerd takes a zombie containerd for a live one.
func processExists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// restart starts dockerd again after kill, on the same folders.
func (d *daemon) restart() error {
	if d.alive() {
		return errors.New("dockerd is still running")
	}
	return d.start()
}

// stop ends dockerd the normal way (SIGCONT first, in case a fault left it stopped), and
// SIGKILL after 45 seconds.
func (d *daemon) stop() {
	if !d.alive() {
		return
	}
	_ = d.signal(syscall.SIGCONT)
	_ = d.signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(45 * time.Second):
		_ = d.kill()
	}
}

// endProcesses SIGKILLs the processes whose command line names the daemon's folder and for
// which pick is true: its containerd and the shims of its containers, all started by the
// private daemon. Nothing else is touched.
func (d *daemon) endProcesses(pick func(cmdline string) bool) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmdline, d.dir+"/") && pick(cmdline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// remove stops the daemon, ends what it left running, removes its cgroups and its folder.
func (d *daemon) remove() error {
	var errs []error
	if d.alive() {
		_ = d.signal(syscall.SIGCONT) // a fault may have left it stopped
	}
	if d.api != nil && d.alive() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := d.wipe(ctx, true); err != nil {
			errs = append(errs, err)
		}
		cancel()
		d.api.Close()
	}
	d.stop()
	d.endProcesses(func(string) bool { return true })
	d.endContainers()
	if d.log != nil {
		d.log.Close()
	}
	for _, root := range cgroupRoots() {
		if err := removeCgroup(filepath.Join(root, d.cgroup)); err != nil {
			errs = append(errs, err)
		}
	}
	if d.netns != "" {
		if out, err := exec.Command("ip", "netns", "delete", d.netns).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("removing the network namespace %s: %v: %s", d.netns, err, out))
		}
	}
	if d.dir != "" {
		if err := os.RemoveAll(d.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing the daemon's folder: %w", err))
		}
	}
	return errors.Join(errs...)
}

// endContainers SIGKILLs the processes left in the cgroup parent (containers whose shim
// is gone, a runc init that never started) and waits, ten seconds at most, until it is empty.
func (d *daemon) endContainers() {
	root := filepath.Join("/sys/fs/cgroup", d.cgroup)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		root = filepath.Join("/sys/fs/cgroup/memory", d.cgroup)
	}
	procs := func() []int {
		var pids []int
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.Name() == "cgroup.procs" {
				b, _ := os.ReadFile(p)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids = append(pids, pid)
					}
				}
			}
			return nil
		})
		return pids
	}
	deadline := time.Now().Add(10 * time.Second)
	for pids := procs(); len(pids) > 0 && time.Now().Before(deadline); pids = procs() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond) // teardown: the kernel reaps them in a moment
	}
}

// cgroupRoots are the hierarchies the cgroup parent may have a folder in.
func cgroupRoots() []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}
	}
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	var roots []string
	for _, e := range ents {
		if e.IsDir() {
			roots = append(roots, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return roots
}

// removeCgroup removes a cgroup folder and its children, deepest first (a cgroup folder is
// removed with rmdir; its control files go with it).
func removeCgroup(p string) error {
	ents, err := os.ReadDir(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := removeCgroup(filepath.Join(p, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := syscall.Rmdir(p); err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("removing cgroup %s: %w", p, err)
	}
	return nil
}

// subscribe follows the daemon's events matching the filters (key, value pairs) until ctx
// ends; it returns once the daemon has accepted the subscription, so that nothing started
// afterwards is missed.
func (d *daemon) subscribe(ctx context.Context, kv ...string) <-chan events.Message {
	f := make(client.Filters)
	for i := 0; i+1 < len(kv); i += 2 {
		f.Add(kv[i], kv[i+1])
	}
	res := d.api.Events(ctx, client.EventsListOptions{Filters: f})
	return res.Messages
}

// await waits for the next event on ch, bounded by ctx.
func await(ctx context.Context, ch <-chan events.Message, what string) (events.Message, error) {
	select {
	case m, ok := <-ch:
		if !ok {
			return m, fmt.Errorf("the event stream ended before %s", what)
		}
		return m, nil
	case <-ctx.Done():
		return events.Message{}, fmt.Errorf("no %s: %w", what, ctx.Err())
	}
}
