//go:build linux

package probe

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/reference"
)

// conformanceHeader starts every conformance stack: each service is the probe image, whose
// agent reports and stays up, labelled so that the leak checks see it.
const conformanceHeader = `name: {{project}}

x-probe: &probe
  image: {{image}}
  pull_policy: never
  command: ["--protocol", "{{protocol}}", "--target", "0", "--hold", "60s"]
  network_mode: none
  labels:
    io.shmdoctor.probe: {{label}}
    io.shmdoctor.project: {{project}}

`

// conformanceFixture is the stack both docker compose and the doctor run: every service is
// the probe image, whose agent measures /dev/shm, prints its report and stays up (so that
// the joiner can join the donor and the logs can be read while compose keeps it running).
//
// Each service name says what it covers; every case the model knows how to map is here:
// IPC modes, shm_size, both ways of mounting a tmpfs, binds and named volumes at /dev/shm,
// and memory limits.
const conformanceFixture = conformanceHeader + `services:
  default-private:
    <<: *probe
  private-explicit:
    <<: *probe
    ipc: private
  shm-256m:
    <<: *probe
    shm_size: 256m
  shm-zero:
    <<: *probe
    shm_size: 0
  donor:
    <<: *probe
    ipc: shareable
    shm_size: 96m
  joiner:
    <<: *probe
    ipc: service:donor
    shm_size: 1g
  ipc-host:
    <<: *probe
    ipc: host
    shm_size: 2g
  ipc-none:
    <<: *probe
    ipc: none
  tmpfs-entry:
    <<: *probe
    tmpfs:
      - /dev/shm:size=128m
  tmpfs-entry-nosize:
    <<: *probe
    tmpfs: /dev/shm
  tmpfs-volume:
    <<: *probe
    volumes:
      - type: tmpfs
        target: /dev/shm
        tmpfs:
          size: 200m
  tmpfs-over-shm-size:
    <<: *probe
    shm_size: 1g
    tmpfs:
      - /dev/shm:size=160m
  tmpfs-volume-over-ipc-host:
    <<: *probe
    ipc: host
    volumes:
      - type: tmpfs
        target: /dev/shm
        tmpfs:
          size: 48m
  bind-host-shm:
    <<: *probe
    volumes:
      - /dev/shm:/dev/shm
  named-volume:
    <<: *probe
    volumes:
      - shmvol:/dev/shm
  mem-limit:
    <<: *probe
    mem_limit: 512m
    shm_size: 384m
  deploy-limit:
    <<: *probe
    shm_size: 300m
    deploy:
      resources:
        limits:
          memory: 640m

volumes:
  shmvol: {}
`

// conformanceNonShareable is a donor left private, which neither docker compose nor the
// doctor can join: compose fails on up, the doctor must report Docker's error (SHM205).
const conformanceNonShareable = conformanceHeader + `services:
  donor:
    <<: *probe
    shm_size: 96m
  joiner:
    <<: *probe
    ipc: service:donor
`

// TestComposeConformance brings the fixture up with the real docker compose, reads what the
// agent saw inside each compose container, then probes the same file with the doctor
// (compose.Load, then Run) and requires the same /dev/shm for every service: existence, size,
// filesystem type, mount source, and the memory cgroup limit. This is the proof that the
// doctor maps a service to a container the way docker compose does. A second stack, whose
// donor is not shareable, must fail in both.
func TestComposeConformance(t *testing.T) {
	c := daemon(t)
	o := testOptions(t) // the project name: the final leak checks look for it
	o.WriteProbe = "off"
	compose := reference.ComposeFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	image, err := engine.Image(ctx, c, testAgent)
	if err != nil {
		t.Fatalf("probe image: %v", err)
	}

	t.Run("stack", func(t *testing.T) {
		st := composeStack(ctx, t, c, compose, image, o.Project, conformanceFixture)
		start := time.Now()
		if out, err := st.up(ctx, t, c, image); err != nil {
			t.Fatalf("docker compose up: %v\n%s", err, out)
		}
		t.Logf("docker compose up -d: %v", time.Since(start).Round(time.Millisecond))
		want := composeReports(ctx, t, c, o.Project)

		plans := st.plans(ctx, t)
		got := run(t, o, plans...)
		if len(plans) != len(want) {
			t.Errorf("the doctor plans %d services, docker compose ran %d", len(plans), len(want))
		}
		for _, pl := range plans {
			name := pl.Service
			w, g := want[name], got[name]
			switch {
			case w == nil:
				t.Errorf("%s: docker compose ran no container for it", name)
				continue
			case g == nil:
				t.Errorf("%s: the doctor did not probe it", name)
				continue
			}
			t.Logf("%-28s compose: %s", name, describe(w))
			for _, d := range compareMeasurements(w, g) {
				t.Errorf("%s: %s\n\tcompose: %s\n\tdoctor:  %s", name, d, describe(w), describe(g))
			}
		}
	})

	t.Run("non-shareable-donor", func(t *testing.T) {
		project := o.Project + "-nonshareable"
		st := composeStack(ctx, t, c, compose, image, project, conformanceNonShareable)
		out, upErr := st.up(ctx, t, c, image)
		t.Logf("docker compose up: %v\n%s", upErr, out)

		po := o
		po.Project = project
		got := run(t, po, st.plans(ctx, t)...)
		joiner := got["joiner"]
		if joiner == nil {
			t.Fatal("joiner: the doctor did not probe it")
		}
		const why = "non-shareable IPC"
		switch {
		case upErr == nil:
			// A daemon whose default IPC mode is shareable: both must then run it.
			want := composeReports(ctx, t, c, project)
			for _, d := range compareMeasurements(want["joiner"], joiner) {
				t.Errorf("joiner: %s", d)
			}
		case !strings.Contains(string(out), why):
			t.Errorf("docker compose up failed, but not for the donor: %s", out)
		case !strings.Contains(joiner.CreateError, why):
			t.Errorf("docker compose up failed with %q; the doctor's probe of the joiner: %s", lastLine(string(out)), describe(joiner))
		}
	})
}

// conformanceStack is one compose project in a folder of its own.
type conformanceStack struct {
	dir     string
	compose func(ctx context.Context, args ...string) ([]byte, error)
}

// composeStack writes the fixture (with the probe image, the project and a fresh label) into
// a temporary folder and removes whatever docker compose made of it at cleanup, checking by
// label that nothing is left.
func composeStack(ctx context.Context, t *testing.T, c *client.Client, compose, image, project, fixture string) *conformanceStack {
	t.Helper()
	label := "conformance-" + engine.NewRunID()
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	yaml := strings.NewReplacer("{{project}}", project, "{{image}}", image, "{{label}}", label, "{{protocol}}", strconv.Itoa(protocol.Version)).Replace(fixture)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerConfig := t.TempDir()
	st := &conformanceStack{dir: dir}
	st.compose = func(ctx context.Context, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, compose, append([]string{"-f", file, "-p", project}, args...)...)
		cmd.Env = conformanceEnv(dockerConfig)
		return cmd.CombinedOutput()
	}
	t.Cleanup(func() {
		// A context of its own: the test's may be done.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if out, err := st.compose(ctx, "down", "-v", "--remove-orphans", "-t", "0"); err != nil {
			t.Errorf("docker compose down: %v\n%s", err, out)
		}
		f := make(client.Filters).Add("label", engine.LabelProbe+"="+label)
		list, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			t.Errorf("listing the compose containers: %v", err)
			return
		}
		for _, s := range list.Items {
			t.Errorf("compose container left behind: %s %v (%s)", s.ID[:12], s.Names, s.State)
			_, _ = c.ContainerRemove(ctx, s.ID, client.ContainerRemoveOptions{Force: true})
		}
		vf := make(client.Filters).Add("label", "com.docker.compose.project="+project)
		vols, err := c.VolumeList(ctx, client.VolumeListOptions{Filters: vf})
		if err != nil {
			t.Errorf("listing the compose volumes: %v", err)
			return
		}
		for _, v := range vols.Items {
			t.Errorf("compose volume left behind: %s", v.Name)
			_, _ = c.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
		}
	})
	return st
}

// up runs docker compose up -d. The probe image may vanish between its import and up when
// another run on the daemon cleans probe images (`shmdoctor probe --clean` spares only the
// images containers use): then it is imported again and up retried once.
func (st *conformanceStack) up(ctx context.Context, t *testing.T, c *client.Client, image string) ([]byte, error) {
	t.Helper()
	out, err := st.compose(ctx, "up", "-d", "--no-build", "--quiet-pull")
	if err == nil {
		return out, nil
	}
	if _, ierr := c.ImageInspect(ctx, image); ierr == nil {
		return out, err
	}
	t.Logf("the probe image %s vanished before docker compose up, importing it again: %s", image, lastLine(string(out)))
	if _, ierr := engine.Image(ctx, c, testAgent); ierr != nil {
		t.Fatalf("probe image: %v", ierr)
	}
	return st.compose(ctx, "up", "-d", "--no-build", "--quiet-pull")
}

// plans loads the stack the doctor's way.
func (st *conformanceStack) plans(ctx context.Context, t *testing.T) []*analyze.ShmPlan {
	t.Helper()
	projects := compose.Load(ctx, compose.Options{Paths: []string{st.dir}})
	if len(projects) != 1 {
		t.Fatalf("compose.Load: %d projects, want 1", len(projects))
	}
	for _, e := range projects[0].Errors {
		t.Fatalf("compose.Load: %v", e)
	}
	return projects[0].Plans
}

// conformanceEnv is the environment docker compose runs in: no user docker config and no
// COMPOSE_* choices, so that only the fixture decides.
func conformanceEnv(dockerConfig string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "COMPOSE_") || strings.HasPrefix(kv, "DOCKER_CONFIG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "DOCKER_CONFIG="+dockerConfig)
}

// composeReports waits for the agent's report in the logs of every container of the compose
// project and returns them by service.
func composeReports(ctx context.Context, t *testing.T, c *client.Client, project string) map[string]*analyze.Measurement {
	t.Helper()
	f := make(client.Filters).Add("label", "com.docker.compose.project="+project)
	list, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatalf("listing the compose containers: %v", err)
	}
	if len(list.Items) == 0 {
		t.Fatalf("docker compose started no container")
	}
	out := map[string]*analyze.Measurement{}
	deadline := time.Now().Add(45 * time.Second)
	for _, s := range list.Items {
		service := s.Labels["com.docker.compose.service"]
		for {
			rep, stderr, err := agentReportOf(ctx, c, s.ID)
			if err != nil {
				t.Fatalf("%s: reading the logs of %s: %v", service, s.ID[:12], err)
			}
			if rep != nil {
				out[service] = rep.Measurement()
				break
			}
			if time.Now().After(deadline) {
				ins, _ := c.ContainerInspect(ctx, s.ID, client.ContainerInspectOptions{})
				state := ""
				if ins.Container.State != nil {
					state = fmt.Sprintf("status %s, exit code %d", ins.Container.State.Status, ins.Container.State.ExitCode)
				}
				t.Fatalf("%s: no agent report in the logs of %s (%s): %s", service, s.ID[:12], state, stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return out
}

// agentReportOf returns the agent's final report from a container's logs, nil while it has
// not printed it yet, and what the container printed on stderr.
func agentReportOf(ctx context.Context, c *client.Client, id string) (*protocol.Report, string, error) {
	rc, err := c.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, rc); err != nil {
		return nil, "", err
	}
	parsed, err := protocol.ParseOutput(&stdout)
	if err != nil {
		return nil, stderr.String(), err
	}
	if !parsed.Complete {
		return nil, stderr.String(), nil
	}
	return parsed.Report, stderr.String(), nil
}

// compareMeasurements lists how the doctor's measurement differs from what the agent saw in
// the compose container. Sizes must be equal to the byte: both are the same mount on the same
// daemon. Free space is not compared (the host's /dev/shm changes under both).
func compareMeasurements(compose, doctor *analyze.Measurement) []string {
	var d []string
	if doctor.Error != "" || doctor.CreateError != "" {
		return []string{fmt.Sprintf("the doctor's probe failed: error %q, create error %q", doctor.Error, doctor.CreateError)}
	}
	if compose.Error != "" {
		d = append(d, fmt.Sprintf("the agent in the compose container reported errors: %s", compose.Error))
	}
	if compose.Exists != doctor.Exists {
		d = append(d, fmt.Sprintf("/dev/shm exists: compose %v, doctor %v", compose.Exists, doctor.Exists))
	}
	if sizeOf(compose.MeasuredBytes) != sizeOf(doctor.MeasuredBytes) {
		d = append(d, fmt.Sprintf("size: compose %s, doctor %s", sizeOf(compose.MeasuredBytes), sizeOf(doctor.MeasuredBytes)))
	}
	if compose.FSType != doctor.FSType {
		d = append(d, fmt.Sprintf("fs type: compose %q, doctor %q", compose.FSType, doctor.FSType))
	}
	if compose.MountSource != doctor.MountSource {
		d = append(d, fmt.Sprintf("mount source: compose %q, doctor %q", compose.MountSource, doctor.MountSource))
	}
	if a, b := mountSizeOption(compose.MountOptions), mountSizeOption(doctor.MountOptions); a != b {
		d = append(d, fmt.Sprintf("mount size option: compose %q, doctor %q", a, b))
	}
	if sizeOf(compose.CgroupMemory) != sizeOf(doctor.CgroupMemory) {
		d = append(d, fmt.Sprintf("memory cgroup limit: compose %s, doctor %s", sizeOf(compose.CgroupMemory), sizeOf(doctor.CgroupMemory)))
	}
	return d
}

func sizeOf(n *int64) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprintf("%s (%d)", analyze.FormatSize(*n), *n)
}

// mountSizeOption is the size= option of a mount, "" when it has none.
func mountSizeOption(opts string) string {
	for _, o := range strings.Split(opts, ",") {
		if strings.HasPrefix(o, "size=") {
			return o
		}
	}
	return ""
}
