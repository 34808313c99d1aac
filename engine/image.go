package engine

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
)

// embeddedAgents holds the static linux agents a release build carries, gzip-compressed, as
// agents/linux-ARCH.gz: release builds (-tags embedagents) embed them, so that a doctor
// running on macOS, Windows or another architecture can still probe a Linux daemon; other
// builds hold none. They are read only when needed: a run whose own binary serves as the
// agent never decompresses them.
var embeddedAgents fs.FS = agentFiles

// AgentEnv names the environment variable that, set to "embedded", makes the probe use the
// agent embedded in a release build even where the doctor's own binary would serve: the way
// to check a release build's agents on a Linux machine.
const AgentEnv = "SHMDOCTOR_PROBE_AGENT"

// EmbeddedAgents lists the platforms ("linux/amd64", "linux/arm64") this build embeds an
// agent for, sorted.
func EmbeddedAgents() []string {
	names, _ := fs.Glob(embeddedAgents, "agents/linux-*.gz")
	var platforms []string
	for _, n := range names {
		platforms = append(platforms, "linux/"+strings.TrimSuffix(strings.TrimPrefix(n, "agents/linux-"), ".gz"))
	}
	sort.Strings(platforms)
	return platforms
}

// embeddedAgent decompresses the agent embedded for platform; nil without one.
func embeddedAgent(platform string) ([]byte, error) {
	goos, goarch, _ := strings.Cut(platform, "/")
	f, err := embeddedAgents.Open("agents/" + goos + "-" + goarch + ".gz")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the embedded %s agent: %w", platform, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("reading the embedded %s agent: %w", platform, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("reading the embedded %s agent: %w", platform, err)
	}
	return data, nil
}

const (
	// ImageRepository is the repository of the probe images; the tag is the first 12 hex
	// digits of the agent binary's sha256.
	ImageRepository = "shmdoctor-probe"
	// LabelImage marks probe images; its value is the agent binary's full sha256.
	LabelImage = "io.shmdoctor.probe-image"
	// LabelProtocol is the agent protocol (protocol.Version) of a probe image's agent.
	LabelProtocol = "io.shmdoctor.protocol"
	// agentPath is where the agent binary lives in the image.
	agentPath = "/shmdoctor"
)

// Agent is the agent chosen for the daemon's platform.
type Agent struct {
	data     []byte      // nil until read: a run whose image exists may never read it
	libs     []imageFile // a dynamically linked agent's interpreter and shared libraries
	digest   string      // hex sha256 of the binary, and of its libraries when it has any
	platform string      // linux/amd64
	from     string      // the file it was read from, or "embedded"
	embedded bool
}

func (a *Agent) ref() string { return ImageRepository + ":" + a.digest[:12] }

// DaemonPlatform maps the daemon's Info OSType and Architecture to GOOS/GOARCH.
func DaemonPlatform(osType, arch string) (goos, goarch string) {
	goos = strings.ToLower(osType)
	switch strings.ToLower(arch) {
	case "x86_64", "amd64":
		goarch = "amd64"
	case "aarch64", "arm64":
		goarch = "arm64"
	case "armv7l", "armv6l", "armhf", "arm":
		goarch = "arm"
	case "i386", "i686", "386":
		goarch = "386"
	case "ppc64le":
		goarch = "ppc64le"
	case "s390x":
		goarch = "s390x"
	case "riscv64":
		goarch = "riscv64"
	default:
		goarch = strings.ToLower(arch)
	}
	return goos, goarch
}

var elfMachines = map[elf.Machine]string{
	elf.EM_X86_64:  "amd64",
	elf.EM_AARCH64: "arm64",
	elf.EM_ARM:     "arm",
	elf.EM_386:     "386",
	elf.EM_PPC64:   "ppc64le",
	elf.EM_S390:    "s390x",
	elf.EM_RISCV:   "riscv64",
}

// linuxExecutable reads the headers of a Linux ELF executable and its GOARCH, or says why r
// does not hold one.
func linuxExecutable(r io.ReaderAt) (*elf.File, string, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, "", errors.New("not an ELF executable")
	}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return nil, "", fmt.Errorf("an ELF executable for %v, not linux", f.OSABI)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return nil, "", fmt.Errorf("an ELF %v, not an executable", f.Type)
	}
	arch, ok := elfMachines[f.Machine]
	if !ok {
		return nil, "", fmt.Errorf("built for %v", f.Machine)
	}
	if arch == "ppc64le" && f.ByteOrder.String() != "LittleEndian" {
		arch = "ppc64"
	}
	return f, arch, nil
}

// SelectAgent picks the agent for the daemon's platform: the doctor's own binary when it is a
// Linux executable for that architecture (with its shared libraries when it is dynamically
// linked, as a go install build with cgo is), else an embedded agent. An empty binary is
// os.Executable(), or no binary at all when AgentEnv says embedded.
func SelectAgent(binary, goos, goarch string) (*Agent, error) {
	platform := goos + "/" + goarch
	if goos != "linux" {
		return nil, fmt.Errorf("the Docker daemon runs %s containers; the probe needs a linux daemon", goos)
	}
	var why string
	forced := false
	if binary == "" {
		switch v := os.Getenv(AgentEnv); v {
		case "":
		case "embedded":
			forced, why = true, AgentEnv+" is embedded"
		default:
			return nil, fmt.Errorf("%s=%q: the only value is embedded", AgentEnv, v)
		}
	}
	if binary == "" && !forced {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding the doctor's own binary: %w", err)
		}
		binary = exe
	}
	if !forced {
		agent, err := localAgent(binary, goarch)
		if err == nil {
			return agent, nil
		}
		why = err.Error()
	}
	if d, ok := embeddedDigests.Load(platform); ok {
		return &Agent{digest: d.(string), platform: platform, from: "embedded", embedded: true}, nil
	}
	data, err := embeddedAgent(platform)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		digest := agentDigest(data, nil)
		embeddedDigests.Store(platform, digest)
		return &Agent{data: data, digest: digest, platform: platform, from: "embedded", embedded: true}, nil
	}
	return nil, fmt.Errorf("no probe agent for the daemon's platform %s: %s and this build embeds no agent for it; "+
		"build the doctor with CGO_ENABLED=0 GOOS=linux GOARCH=%s go build ./cmd/shmdoctor and run that binary, "+
		"or use a release build (they embed agents for linux/amd64 and linux/arm64)", platform, why, goarch)
}

// localAgent is the agent binary when it is a Linux executable for goarch, with the shared
// libraries it needs; the error says why it is not one. Its bytes are read only when their
// digest is not recorded for the files as they are (see localDigest).
func localAgent(binary, goarch string) (*Agent, error) {
	f, err := os.Open(binary)
	if err != nil {
		return nil, fmt.Errorf("reading the agent binary: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the agent binary: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", binary)
	}
	ef, arch, err := linuxExecutable(f)
	if err != nil {
		return nil, fmt.Errorf("%s is %v", binary, err)
	}
	if arch != goarch {
		return nil, fmt.Errorf("%s is a linux/%s executable", binary, arch)
	}
	libs, err := sharedLibraries(ef)
	if err != nil {
		return nil, fmt.Errorf("%s is dynamically linked and %v", binary, err)
	}
	digest, data, libs, err := localDigest(binary, f, fi, libs)
	if err != nil {
		return nil, err
	}
	return &Agent{data: data, libs: libs, digest: digest, platform: "linux/" + goarch, from: binary}, nil
}

// Image returns the probe image for the daemon's platform, importing it when the daemon
// lacks it: a scratch image holding the agent at /shmdoctor with the entrypoint
// `/shmdoctor agent`, tagged ImageRepository:<first 12 hex digits of the binary's sha256>.
// binary is the doctor's own binary (default os.Executable()); an embedded agent is used
// when it is not a static Linux executable for the daemon's architecture. Benchmarks and the
// compose conformance test run this image directly.
func Image(ctx context.Context, c Client, binary string) (string, error) {
	info, err := c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", fmt.Errorf("reading daemon info: %s", Reason(err))
	}
	goos, goarch := DaemonPlatform(info.Info.OSType, info.Info.Architecture)
	agent, err := SelectAgent(binary, goos, goarch)
	if err != nil {
		return "", err
	}
	return EnsureImage(ctx, c, agent)
}

// imageLocks serialises builds of one image within this process.
var imageLocks sync.Map // ref → *sync.Mutex

// EnsureImage returns the probe image for agent, importing it when the daemon lacks it. It
// never pulls: the image is a scratch image holding only the agent binary.
func EnsureImage(ctx context.Context, c Client, agent *Agent) (string, error) {
	ref := agent.ref()
	mu, _ := imageLocks.LoadOrStore(ref, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()

	if res, err := c.ImageInspect(ctx, ref); err == nil && speaks(res) {
		return ref, nil
	} else if err != nil && !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("inspecting probe image %s: %w", ref, err)
	}
	// Doctors starting together on this machine import one after the other: each import
	// makes a new image, and the tag moves to the last one, leaving the others untagged.
	if dir, _, err := lockDir(); err == nil {
		if f, err := lockFile(ctx, filepath.Join(dir, "import-"+agent.digest[:12]+".lock")); err == nil {
			defer func() {
				_ = os.Remove(f.Name())
				_ = f.Close()
			}()
			if res, err := c.ImageInspect(ctx, ref); err == nil && speaks(res) {
				return ref, nil
			}
		} else if ctx.Err() != nil {
			return "", fmt.Errorf("importing probe image %s: %w", ref, ctx.Err())
		}
	}

	layer, err := agentLayer(agent)
	if err != nil {
		return "", err
	}
	changes := []string{
		`ENTRYPOINT ["` + agentPath + `", "agent"]`,
		"LABEL " + LabelImage + "=" + agent.digest,
		"LABEL " + LabelProtocol + "=" + strconv.Itoa(protocol.Version),
	}
	if len(agent.libs) > 0 {
		changes = append(changes, "ENV LD_LIBRARY_PATH="+libraryPath(agent.libs[1:]))
	}
	goos, goarch, _ := strings.Cut(agent.platform, "/")
	rc, err := c.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(layer), SourceName: "-"}, ref, client.ImageImportOptions{
		Message:  "shmdoctor probe agent (" + agent.from + ")",
		Changes:  changes,
		Platform: ocispec.Platform{OS: goos, Architecture: goarch},
	})
	if err != nil {
		return "", fmt.Errorf("importing probe image %s: %s", ref, DockerMessage(err))
	}
	defer rc.Close()
	if err := readJSONStream(rc); err != nil {
		return "", fmt.Errorf("importing probe image %s: %w", ref, err)
	}
	if _, err := c.ImageInspect(ctx, ref); err != nil {
		return "", fmt.Errorf("importing probe image %s: the image is missing afterwards: %s", ref, DockerMessage(err))
	}
	removeUntagged(ctx, c, agent.digest)
	return ref, nil
}

// speaks reports whether an existing probe image holds an agent of this protocol, as its
// LabelProtocol says. An image without the label that is a probe image was imported before
// agents had versions: it is imported again, which moves its tag. Nothing but a probe image
// has the name, so an image without labels at all is taken as it is.
func speaks(res client.ImageInspectResult) bool {
	if res.Config == nil || res.Config.Labels == nil {
		return true
	}
	v, ok := res.Config.Labels[LabelProtocol]
	if !ok {
		_, probe := res.Config.Labels[LabelImage]
		return !probe
	}
	return v == strconv.Itoa(protocol.Version)
}

// removeUntagged removes the untagged images of this agent that no container uses: those a
// doctor that could not share the import lock (another user, another host) imported at the
// same time, whose tag moved to the last import. One a container still uses is refused by
// the daemon and kept.
func removeUntagged(ctx context.Context, c Client, digest string) {
	f := make(client.Filters).Add("label", LabelImage+"="+digest).Add("dangling", "true")
	list, err := c.ImageList(ctx, client.ImageListOptions{Filters: f})
	if err != nil {
		return
	}
	for _, img := range list.Items {
		_, _ = c.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{PruneChildren: true})
	}
}

// NoSuchImage reports a create that failed because the image is gone.
func NoSuchImage(err error) bool {
	// Docker says "No such image: X"; Podman "no such image: X: image not known".
	return err != nil && cerrdefs.IsNotFound(err) && strings.Contains(strings.ToLower(err.Error()), "no such image")
}

// agentLayer is a tar of the whole root filesystem: the agent at /shmdoctor and, for a
// dynamically linked agent, its interpreter and libraries at the paths they have here.
func agentLayer(agent *Agent) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	dirs := map[string]bool{".": true, "/": true}
	var mkdir func(dir string) error
	mkdir = func(dir string) error {
		if dirs[dir] {
			return nil
		}
		dirs[dir] = true
		if err := mkdir(path.Dir(dir)); err != nil {
			return err
		}
		return tw.WriteHeader(&tar.Header{
			Name: strings.TrimPrefix(dir, "/") + "/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: mtime, Format: tar.FormatPAX,
		})
	}
	files, err := agent.files()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := mkdir(path.Dir(f.path)); err != nil {
			return nil, fmt.Errorf("building the probe image layer: %w", err)
		}
		if err := tw.WriteHeader(&tar.Header{
			Name: strings.TrimPrefix(f.path, "/"), Mode: 0o755, Size: int64(len(f.data)),
			Typeflag: tar.TypeReg, ModTime: mtime, Format: tar.FormatPAX,
		}); err != nil {
			return nil, fmt.Errorf("building the probe image layer: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("building the probe image layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("building the probe image layer: %w", err)
	}
	return buf.Bytes(), nil
}

// readJSONStream drains a daemon progress stream and returns the first error it reports.
func readJSONStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading the daemon's answer: %w", err)
		}
		if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
			return errors.New(msg.ErrorDetail.Message)
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
	}
}
