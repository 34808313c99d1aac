// Command release cross-builds the doctor for `make release`: first the linux probe agents,
// gzip-compressed into engine/agents where -tags embedagents embeds them, then every target
// into DIST as shmdoctor_VERSION_OS_ARCH (.exe on Windows), and DIST/SHA256SUMS.
//
// Usage:
//
//	go run ./scripts/release -version v1.2.3 -ldflags '-s -w -X main.buildVersion=v1.2.3 ...' \
//	    [-targets 'linux/amd64 darwin/arm64 ...'] [-agents 'linux/amd64 linux/arm64'] [-dist dist]
//
// The builds are reproducible: static (CGO_ENABLED=0), -trimpath, no timestamp anywhere (the
// ldflags carry the commit's time, gzip headers carry none), files and checksums in a fixed
// order. The same commit built with the same Go version gives the same SHA256SUMS, in any
// checkout folder.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

const (
	agentDir = "engine/agents"
	agentPkg = "./agent/internal/agentcmd"
	mainPkg  = "./cmd/shmdoctor"
)

// safeVersion keeps the version usable in a file name.
var safeVersion = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._+-]*$`)

func main() {
	version := flag.String("version", "", "the version, as in the file names (git describe)")
	ldflags := flag.String("ldflags", "-s -w", "linker flags of the doctor's builds")
	targets := flag.String("targets", "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64", "GOOS/GOARCH pairs to build")
	agents := flag.String("agents", "linux/amd64 linux/arm64", "linux GOOS/GOARCH pairs whose probe agent every target embeds")
	dist := flag.String("dist", "dist", "output folder, emptied first")
	flag.Parse()
	if err := release(*version, *ldflags, strings.Fields(*targets), strings.Fields(*agents), *dist); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func release(version, ldflags string, targets, agents []string, dist string) error {
	if !safeVersion.MatchString(version) {
		return fmt.Errorf("version %q: want what git describe prints, such as v1.2.3", version)
	}
	if len(targets) == 0 || len(agents) == 0 {
		return errors.New("no targets or no agents")
	}
	tmp, err := os.MkdirTemp("", "shmdoctor-release")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// Stale agents would be embedded too: start from an empty folder.
	if err := os.RemoveAll(agentDir); err != nil {
		return err
	}
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		return err
	}
	for _, a := range agents {
		goos, goarch, ok := strings.Cut(a, "/")
		if !ok || goos != "linux" {
			return fmt.Errorf("agent %q: want linux/ARCH", a)
		}
		bin := filepath.Join(tmp, "agent-"+goarch)
		if err := build(goos, goarch, "-ldflags=-s -w", bin, agentPkg); err != nil {
			return err
		}
		if err := gzipFile(bin, filepath.Join(agentDir, "linux-"+goarch+".gz")); err != nil {
			return err
		}
	}

	if err := os.RemoveAll(dist); err != nil {
		return err
	}
	if err := os.MkdirAll(dist, 0o755); err != nil {
		return err
	}
	var names []string
	for _, t := range targets {
		goos, goarch, ok := strings.Cut(t, "/")
		if !ok {
			return fmt.Errorf("target %q: want GOOS/GOARCH", t)
		}
		name := "shmdoctor_" + version + "_" + goos + "_" + goarch
		if goos == "windows" {
			name += ".exe"
		}
		if err := build(goos, goarch, "-ldflags="+ldflags, filepath.Join(dist, name), "-tags=embedagents", mainPkg); err != nil {
			return err
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var sums bytes.Buffer
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dist, n))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), n)
		fmt.Printf("%-50s %6.1f MiB\n", filepath.Join(dist, n), float64(len(data))/(1<<20))
	}
	return os.WriteFile(filepath.Join(dist, "SHA256SUMS"), sums.Bytes(), 0o644)
}

// build runs go build for one platform, static and without file system paths.
func build(goos, goarch, ldflags, out string, args ...string) error {
	gocmd := os.Getenv("GO")
	if gocmd == "" {
		gocmd = "go"
	}
	cmd := exec.Command(gocmd, append([]string{"build", "-trimpath", ldflags, "-o", out}, args...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for %s/%s: %w", args[len(args)-1], goos, goarch, err)
	}
	return nil
}

// gzipFile compresses src into dst with no name and no time in the header.
func gzipFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := io.Copy(zw, in); err != nil {
		return fmt.Errorf("compressing %s: %w", src, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compressing %s: %w", src, err)
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}
