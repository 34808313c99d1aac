package analyze

import "fmt"

// Project is one loaded project, compose or Kubernetes: its plans, and what its loader
// keeps of the files behind them. A project that failed to load has Errors and no plans.
type Project struct {
	// Name is how reports name the project: a compose project's name as written where a
	// variable sets it (${COMPOSE_PROJECT_NAME}), a manifest's file name.
	Name string
	// ComposeName is the name docker compose gives a compose project, which its
	// containers carry in their labels and names; empty when it did not load.
	ComposeName string
	Dir         string
	Files       []string // as displayed
	// Compose is set on a compose project whose model loaded; Kubernetes on a manifest.
	Compose    bool
	Kubernetes bool
	Plans      []*ShmPlan
	Notes      []string
	Errors     []*LoadError
	// Engine is the engine the project is predicted for: its defaults size a service that
	// sets nothing. The zero value is Docker's.
	Engine Engine
	// Variant is set on a compose file -r found beside the default names: how it was checked.
	Variant *Variant
	// EnvFiles are the env_file paths of the services, which the doctor never reads.
	EnvFiles []string
	// Doc is the files the project was read from, as its loader keeps them: nil when
	// nothing was read.
	Doc Document
	// All are every plan of an overlay, whose Plans are the services it changes; nil
	// when Plans are all.
	All []*ShmPlan
	// Suppressors are the suppressions written in the project's files.
	Suppressors []*Suppressor
}

// Document is what a loader keeps of the files a project was read from: where the keys of
// each service are written, and how to change them. Rules reach it through Pass; they never
// see the YAML itself.
type Document interface {
	// FilesRead lists every file read, as displayed, in the order read.
	FilesRead() []string
	// Display is a file's name as reports show it: relative to the working folder when
	// below it.
	Display(path string) string
	// Content is a file as it was loaded; false when it was not read.
	Content(path string) ([]byte, bool)
	// KeyPos is where the winning value of a service key is written; false when the key
	// is written nowhere.
	KeyPos(service string, key ...string) (Pos, bool)
	// ServicePos is the position of a service's name, else of the project's first file.
	ServicePos(service string) Pos
	// MountPos is the entry that mounts something at /dev/shm; false when none is written.
	MountPos(plan *ShmPlan) (Pos, bool)
	// Reads reports whether a file, as named or as displayed, is one the project read.
	Reads(file string) bool
	Editor
}

// Editor makes the text edits fixes are made of, in the files a project was read from. It
// knows where keys are written and how the files are laid out; what to write, and whether
// to, is the rules' to decide. A method that does not apply to the project's kind of file
// returns an error.
type Editor interface {
	// SetShmSize makes the fix that gives a compose service the shm_size size: it replaces
	// the value where the winning shm_size is written, keeping its quoting, or adds the key
	// to the service's own definition. It does not judge the size.
	SetShmSize(service string, size int64) (*Fix, error)
	// SetKey gives a service key a scalar value: where the winning value is written, or
	// added to the service's own definition.
	SetKey(service, key, value string) ([]Edit, error)
	// RemoveKey removes a service key wherever it is written (every file, so that no lower
	// layer takes over), or only where match accepts its scalar value.
	RemoveKey(service string, match func(value string) bool, path ...string) ([]Edit, error)
	// Raw is the winning value of a service key as written: quoting and variables kept.
	Raw(service string, path ...string) (string, bool)
	// SetUlimits sets ulimits entries of a service to scalar values, adding those missing.
	SetUlimits(service string, entries []KeyValue) ([]Edit, error)
	// SizeTmpfs sizes the tmpfs a plan mounts at /dev/shm: the size= option of a tmpfs
	// entry, or tmpfs.size of a volumes entry.
	SizeTmpfs(plan *ShmPlan, size string) ([]Edit, error)
	// MountMemory mounts a new memory emptyDir of size at /dev/shm in a Kubernetes
	// container: a volumeMounts entry and a volumes entry in its pod spec.
	MountMemory(plan *ShmPlan, size string) ([]Edit, error)
	// SizeEmptyDir makes the emptyDir at a container's /dev/shm memory-backed with a
	// sizeLimit of size.
	SizeEmptyDir(plan *ShmPlan, size string) ([]Edit, error)
}

// UnusedSuppression is the rule of the findings the framework reports itself: a
// suppression that matches nothing.
const UnusedSuppression = "SHM090"

// KeyValue is a key and the scalar value an edit writes.
type KeyValue struct{ Key, Value string }

// DisplayDir is the project folder as reports show it: relative to the working folder when
// below it.
func (p *Project) DisplayDir() string {
	if p.Doc == nil {
		return p.Dir
	}
	return p.Doc.Display(p.Dir)
}

// Loaded reports whether the project was loaded far enough to be checked: a compose model,
// or a Kubernetes manifest that parsed.
func (p *Project) Loaded() bool {
	return p.Compose || (p.Kubernetes && len(p.Errors) == 0)
}

// Owner returns the plan whose namespace a plan ends up in (itself unless it joins a service).
func (p *Project) Owner(plan *ShmPlan) *ShmPlan {
	if len(plan.Via) == 0 {
		return plan
	}
	last := plan.Via[len(plan.Via)-1]
	for _, q := range p.plans() {
		if q.Service == last {
			return q
		}
	}
	return plan
}

// Plan returns the plan of a service, or nil.
func (p *Project) Plan(service string) *ShmPlan {
	for _, q := range p.plans() {
		if q.Service == service {
			return q
		}
	}
	return nil
}

// plans are every plan of the project, those of an overlay's base services included.
func (p *Project) plans() []*ShmPlan {
	if p.All != nil {
		return p.All
	}
	return p.Plans
}

// Fail records a located error of the project's input.
func (p *Project) Fail(pos Pos, format string, args ...any) {
	p.Errors = append(p.Errors, &LoadError{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// LoadError is a located error in a project's input.
type LoadError struct {
	Pos
	Msg string
	// Cause is the loader's error the message was made from, if any.
	Cause error `json:"-"`
}

func (e *LoadError) Error() string { return e.Pos.String() + ": " + e.Msg }

// Unwrap returns the loader's error the message was made from, if any.
func (e *LoadError) Unwrap() error { return e.Cause }

// Pos is a place in a source file; Line and Column count from 1, 0 means unknown.
type Pos struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Column == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// StdinName is how a compose file read from standard input is named in reports.
const StdinName = "<stdin>"
