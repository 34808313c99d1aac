package analyze

// Fix is a mechanical change that resolves a finding: text edits of the files the project
// was loaded from, which leave every byte they do not touch as it was. Rules build fixes
// from the source index; they never format them.
type Fix struct {
	// Description says what the fix does, as a sentence.
	Description string
	// Service is the service (or Kubernetes container) whose configuration changes. It may
	// differ from the finding's, as when the fix makes a donor shareable.
	Service string
	// Keys are the keys of Service that change, dotted: shm_size, build.shm_size, ulimits.
	Keys  []string
	Edits []Edit
}

// Edit replaces Old, the bytes between offsets Start and End of a file as it was loaded,
// with New.
type Edit struct {
	Path       string // the file: absolute, or "-" for standard input
	Start, End int
	Old, New   string
	// Slot names what an insertion adds where: two insertions at one place conflict only
	// when they add the same key or item.
	Slot string
}

// Attach gives a finding its fix, or the reason it has none.
func (f *Finding) Attach(fix *Fix, err error) {
	if err != nil {
		f.NoFix = err.Error()
		return
	}
	if fix != nil && len(fix.Edits) > 0 {
		f.Fix = fix
	}
}
