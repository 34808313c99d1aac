package engine

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// A doctor built by `go install` on a machine with a C compiler is dynamically linked (cgo is
// on by default), so it cannot run alone in a scratch image. Its probe image then carries,
// beside the binary, the ELF interpreter and every shared library the binary needs, resolved
// from the ELF as this machine's loader would resolve them: the image stays local, built from
// what is on disk, and no Go toolchain is needed at run time. A static build needs none of it.

// imageFile is one regular file of the probe image's root filesystem.
type imageFile struct {
	path string      // absolute path in the image
	src  string      // the file of this machine's it is read from, for a library
	info os.FileInfo // what src was when it was read or found
	data []byte      // nil until read: a run whose image exists reads no library
}

// libraryPath is the loader's search path set in the probe image of a dynamically linked
// agent: the folders its libraries were copied to. The image has no ld.so.cache.
func libraryPath(libs []imageFile) string {
	var dirs []string
	for _, l := range libs {
		if d := path.Dir(l.path); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, ":")
}

// sharedLibraries returns the ELF interpreter and the shared libraries, needed directly or
// through another library, of the dynamically linked executable f, found on this machine
// and not yet read; nil for a static executable.
func sharedLibraries(f *elf.File) ([]imageFile, error) {
	interp, err := interpreter(f)
	if err != nil || interp == "" {
		return nil, err
	}
	il, err := openLibrary(interp, f)
	if err != nil {
		return nil, fmt.Errorf("reading the ELF interpreter %s: %w", interp, err)
	}
	files := []imageFile{il.file}
	dirs := librarySearchPath(interp)
	seen := map[string]bool{path.Base(interp): true}
	needed, err := f.ImportedLibraries()
	queue := []library{{needed: needed, neededErr: err, runPath: runPath(f)}}
	for len(queue) > 0 {
		obj := queue[0]
		queue = queue[1:]
		if obj.neededErr != nil {
			return nil, fmt.Errorf("reading the needed libraries: %w", obj.neededErr)
		}
		for _, name := range obj.needed {
			if seen[name] {
				continue
			}
			seen[name] = true
			lib, err := findLibrary(name, append(obj.runPath, dirs...), f)
			if err != nil {
				return nil, err
			}
			files = append(files, lib.file)
			queue = append(queue, lib)
		}
	}
	return files, nil
}

// library is a shared library found for the executable, with what it needs in turn.
type library struct {
	file      imageFile
	needed    []string
	neededErr error
	runPath   []string
}

// interpreter returns the PT_INTERP path of f, "" for a static executable.
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("reading the ELF interpreter's name: %w", err)
		}
		return string(bytes.TrimRight(b, "\x00")), nil
	}
	return "", nil
}

// runPath is an object's DT_RUNPATH, else its DT_RPATH, without $ORIGIN-relative entries,
// which cannot name a folder of this machine's.
func runPath(obj *elf.File) []string {
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := obj.DynString(tag)
		var dirs []string
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				if d != "" && !strings.Contains(d, "$") {
					dirs = append(dirs, d)
				}
			}
		}
		if len(dirs) > 0 {
			return dirs
		}
	}
	return nil
}

// librarySearchPath is where the loader looks when an object names no folder of its own: the
// folders of /etc/ld.so.conf (which ld.so.cache is built from), then the interpreter's own
// folder (Debian's multiarch folder) and the defaults of glibc and musl.
func librarySearchPath(interp string) []string {
	dirs := ldSoConf("/etc/ld.so.conf", 0)
	if real, err := filepath.EvalSymlinks(interp); err == nil {
		dirs = append(dirs, filepath.Dir(real))
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib")
}

// ldSoConf reads the folders of an ld.so.conf file and the files it includes.
func ldSoConf(name string, depth int) []string {
	f, err := os.Open(name)
	if err != nil || depth > 8 {
		return nil
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case fields[0] == "include":
			for _, pattern := range fields[1:] {
				if !filepath.IsAbs(pattern) {
					pattern = filepath.Join(filepath.Dir(name), pattern)
				}
				matches, _ := filepath.Glob(pattern)
				slices.Sort(matches)
				for _, m := range matches {
					dirs = append(dirs, ldSoConf(m, depth+1)...)
				}
			}
		case filepath.IsAbs(fields[0]):
			dirs = append(dirs, fields[0])
		}
	}
	return dirs
}

// findLibrary looks for the library name in dirs and returns the first that is an ELF shared
// object of exe's class and machine (a 32-bit libc in /usr/lib32 is passed over, as the
// loader passes it over).
func findLibrary(name string, dirs []string, exe *elf.File) (library, error) {
	if strings.Contains(name, "/") {
		return openLibrary(name, exe)
	}
	for _, d := range dirs {
		if lib, err := openLibrary(path.Join(d, name), exe); err == nil {
			return lib, nil
		}
	}
	return library{}, fmt.Errorf("the shared library %s, which the doctor's binary needs, is in none of %s", name, strings.Join(dirs, ", "))
}

// openLibrary reads the ELF headers of the object at p, following links, when it matches
// exe's class and machine, and the libraries it needs; its bytes are read when the image is
// made.
func openLibrary(p string, exe *elf.File) (library, error) {
	f, err := os.Open(p)
	if err != nil {
		return library{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return library{}, err
	}
	if !fi.Mode().IsRegular() {
		return library{}, fmt.Errorf("%s is not a regular file", p)
	}
	lib, err := elf.NewFile(f)
	if err != nil {
		return library{}, fmt.Errorf("%s is not an ELF object", p)
	}
	if lib.Class != exe.Class || lib.Machine != exe.Machine {
		return library{}, errors.New(p + " is built for another machine")
	}
	needed, err := lib.ImportedLibraries()
	return library{file: imageFile{path: p, src: p, info: fi}, needed: needed, neededErr: err, runPath: runPath(lib)}, nil
}
