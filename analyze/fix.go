package analyze

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
	// slot names what an insertion adds where: two insertions at one place conflict only
	// when they add the same key or item.
	slot string
}

// Patch is a set of fixes applied to the files of a project.
type Patch struct {
	Files   []FileChange // sorted by name
	Applied []*Fix
	// Skipped are the fixes whose edits overlap those of an applied fix. They are left for
	// another run, which finds them anew in the patched files.
	Skipped []*Fix
}

// FileChange is one file before and after a patch.
type FileChange struct {
	Path          string // absolute, or "-" for standard input
	Name          string // as reports name it: relative to the working folder when below it
	Before, After []byte
}

// ApplyFixes applies fixes to the files of the project they were made for, in order. A fix
// is applied whole or not at all: one whose edits overlap an applied fix's is skipped, and
// an edit made by several fixes is made once. The patched files are checked to parse as
// YAML, so that a fix never leaves a broken file.
func ApplyFixes(p *Project, fixes []*Fix) (*Patch, error) {
	if p.Index == nil {
		return nil, fmt.Errorf("project %s was not loaded", p.Name)
	}
	pt := &Patch{}
	accepted := map[string][]Edit{}
	for _, f := range fixes {
		if f == nil || len(f.Edits) == 0 {
			continue
		}
		var add []Edit
		ok := true
	edits:
		for _, e := range f.Edits {
			src, known := p.Index.src[e.Path]
			if !known || e.Start < 0 || e.Start > e.End || e.End > len(src) || string(src[e.Start:e.End]) != e.Old {
				return nil, fmt.Errorf("fix %q does not match %s as it was loaded", f.Description, p.Index.display(e.Path))
			}
			for _, a := range append(accepted[e.Path], add...) {
				switch {
				case a.Path != e.Path:
				case a.Start == e.Start && a.End == e.End && a.New == e.New:
					continue edits // the same edit, made for another finding
				case overlap(a, e):
					ok = false
					break edits
				}
			}
			add = append(add, e)
		}
		if !ok {
			pt.Skipped = append(pt.Skipped, f)
			continue
		}
		for _, e := range add {
			accepted[e.Path] = append(accepted[e.Path], e)
		}
		pt.Applied = append(pt.Applied, f)
	}
	for path, es := range accepted {
		before := p.Index.src[path]
		after := applyEdits(before, es)
		if err := parses(after); err != nil {
			return nil, fmt.Errorf("fixing %s would leave invalid YAML (%v): this is a bug, the file is left as it is", p.Index.display(path), err)
		}
		name := p.Index.display(path)
		if path == "-" {
			name = "-"
		}
		pt.Files = append(pt.Files, FileChange{Path: path, Name: name, Before: before, After: after})
	}
	sort.Slice(pt.Files, func(i, j int) bool { return pt.Files[i].Name < pt.Files[j].Name })
	return pt, nil
}

// overlap reports edits that cannot both be made: ranges that intersect, an insertion
// inside a replaced range, or two insertions of the same key at one place.
func overlap(a, b Edit) bool {
	switch {
	case a.Start == a.End && b.Start == b.End:
		return a.Start == b.Start && (a.slot == "" || a.slot == b.slot)
	case a.Start == a.End:
		return b.Start < a.Start && a.Start < b.End
	case b.Start == b.End:
		return a.Start < b.Start && b.Start < a.End
	}
	return a.Start < b.End && b.Start < a.End
}

// applyEdits makes non-overlapping edits; insertions at an offset go before a replacement
// that starts there, in the order they were accepted.
func applyEdits(src []byte, es []Edit) []byte {
	es = append([]Edit(nil), es...)
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Start != es[j].Start {
			return es[i].Start < es[j].Start
		}
		return es[i].Start == es[i].End && es[j].Start != es[j].End
	})
	var out bytes.Buffer
	at := 0
	for _, e := range es {
		out.Write(src[at:e.Start])
		out.WriteString(e.New)
		at = e.End
	}
	out.Write(src[at:])
	return out.Bytes()
}

func parses(b []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// Diff renders the patch as a unified diff that patch -p1 and git apply take: a/ and b/
// prefixes, names relative to the working folder. Standard input is named -.
func (pt *Patch) Diff() string {
	var b strings.Builder
	for _, c := range pt.Files {
		b.WriteString(c.Diff())
	}
	return b.String()
}

// Diff renders the change of one file as Patch.Diff does.
func (c FileChange) Diff() string {
	from, to := "a/"+c.Name, "b/"+c.Name
	if c.Name == "-" || filepath.IsAbs(c.Name) {
		from, to = c.Name, c.Name
	}
	return UnifiedDiff(from, to, c.Before, c.After)
}

// SetShmSize makes the fix that gives a compose service the shm_size size: it replaces
// the value where the winning shm_size is written, keeping its quoting, or adds the key to
// the service's own definition. It does not judge the size: the memory limit, ipc: host
// and mounts at /dev/shm are the caller's to weigh. Render the fix with ApplyFixes and
// Patch.Diff.
func SetShmSize(p *Project, service string, size int64) (*Fix, error) {
	if p.Compose == nil || p.Index == nil {
		return nil, fmt.Errorf("project %s is not a loaded compose project", p.Name)
	}
	if p.Plan(service) == nil {
		return nil, fmt.Errorf("project %s has no service %s", p.Name, service)
	}
	if size < 0 {
		return nil, fmt.Errorf("shm_size %d is negative", size)
	}
	edits, err := p.setKey(service, ShmKey, ComposeSize(size))
	if err != nil {
		return nil, err
	}
	return &Fix{
		Description: fmt.Sprintf("Set shm_size: %s on service %s.", ComposeSize(size), service),
		Service:     service, Keys: []string{ShmKey}, Edits: edits,
	}, nil
}

// removeKeys removes a service key wherever it is written (every file, so that no lower
// layer takes over), or only where match accepts its value.
func (p *Project) removeKeys(service string, match func(*yaml.Node) bool, path ...string) ([]Edit, error) {
	ws, _ := p.Index.writtenAll(service, path...)
	var out []Edit
	for _, w := range ws {
		if match != nil && !match(deref(w.val)) {
			continue
		}
		if w.shared {
			return nil, p.sharedErr(w, path)
		}
		s, err := p.Index.source(w.file)
		if err != nil {
			return nil, err
		}
		var e Edit
		if home, _ := p.Index.home(service); len(w.parent.Content) == 2 && len(path) == 1 && w.layer.node != home.node {
			// an override that sets nothing else: keep the service, overriding nothing
			e, err = s.emptyMapping(w.parentKey, w.parent)
		} else {
			e, err = s.removeEntry(w.parent, w.key, w.val)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func (p *Project) sharedErr(w written, path []string) error {
	return fmt.Errorf("%s at %s comes from a YAML anchor that other services may share: edit it by hand", strings.Join(path, "."), p.Index.pos(w.file, w.key))
}

// setKey gives a service key a scalar value: where the winning value is written, or added
// to the service's own definition.
func (p *Project) setKey(service, key, value string) ([]Edit, error) {
	ws, reset := p.Index.writtenAll(service, key)
	if len(ws) == 0 {
		if reset {
			return nil, fmt.Errorf("%s of service %s is cleared with !reset or !override: edit it by hand", key, service)
		}
		return p.insertKeys(service, []entry{{key: key, value: value}})
	}
	w := ws[0]
	if w.shared {
		return nil, p.sharedErr(w, []string{key})
	}
	if strings.Contains(deref(w.val).Value, "$") {
		return nil, fmt.Errorf("%s at %s is written with a variable: edit it by hand", key, p.Index.pos(w.file, w.key))
	}
	s, err := p.Index.source(w.file)
	if err != nil {
		return nil, err
	}
	e, err := s.setScalar(w.val, value)
	if err != nil || e.Old == e.New {
		return nil, err
	}
	return []Edit{e}, nil
}

// insertKeys adds keys to the service's own definition.
func (p *Project) insertKeys(service string, es []entry) ([]Edit, error) {
	l, ok := p.Index.home(service)
	if !ok {
		return nil, fmt.Errorf("service %s is not written in any file", service)
	}
	if a, in := p.Index.inAnchor(l.file, l.node); in {
		return nil, fmt.Errorf("service %s is the YAML anchor &%s, which other services merge: edit it by hand", service, a)
	}
	if l.shared {
		return nil, fmt.Errorf("service %s is an alias of a YAML anchor other services share: edit it by hand", service)
	}
	s, err := p.Index.source(l.file)
	if err != nil {
		return nil, err
	}
	e, err := s.insertEntries(l.node, p.Index.layout(l.file), es)
	if err != nil {
		return nil, err
	}
	return []Edit{e}, nil
}

// attach gives a finding its fix, or the reason it has none.
func (f *Finding) attach(fix *Fix, err error) {
	if err != nil {
		f.NoFix = err.Error()
		return
	}
	if fix != nil && len(fix.Edits) > 0 {
		f.Fix = fix
	}
}

// fits refuses a /dev/shm size that docker stack deploy would drop, or that the memory
// limit cannot hold: a fix must not trade its finding for SHM040 or SHM012.
func (p *Pass) fits(plan *ShmPlan, size int64) error {
	if p.Config.Target == TargetSwarm {
		return errors.New("docker stack deploy ignores shm_size: size /dev/shm with a tmpfs volume instead (SHM040)")
	}
	return memFits(plan, size)
}

func memFits(plan *ShmPlan, size int64) error {
	for _, key := range []string{"mem_limit", "deploy.resources.limits.memory"} {
		if vars := plan.DependsOn(key); vars != nil {
			return fmt.Errorf("the memory limit depends on unset variables (%s): set them and fix again", strings.Join(vars, ", "))
		}
	}
	if plan.MemLimit != nil && size >= *plan.MemLimit {
		return fmt.Errorf("the memory limit %s cannot hold a /dev/shm of %s: raise it first, /dev/shm pages count against it", FormatSize(*plan.MemLimit), FormatSize(size))
	}
	return nil
}

// fixRemove removes a key of the service wherever it is written.
func (p *Pass) fixRemove(desc string, path ...string) (*Fix, error) {
	edits, err := p.Project.removeKeys(p.Plan.Service, nil, path...)
	if err != nil {
		return nil, err
	}
	return &Fix{Description: desc, Service: p.Plan.Service, Keys: []string{strings.Join(path, ".")}, Edits: edits}, nil
}

// fixShmSize sets a service's shm_size to size, if it fits.
func (p *Pass) fixShmSize(plan *ShmPlan, size int64) (*Fix, error) {
	if err := p.fits(plan, size); err != nil {
		return nil, err
	}
	return SetShmSize(p.Project, plan.Service, size)
}

// fixPrivate removes the service's ipc mode (host or none) and, unless a mount decides
// /dev/shm, makes sure shm_size holds what the workload needs.
func (p *Pass) fixPrivate() (*Fix, error) {
	plan := p.Plan
	mode := plan.IPC
	edits, err := p.Project.removeKeys(plan.Service, func(v *yaml.Node) bool { return v.Value == mode }, "ipc")
	if err != nil || len(edits) == 0 {
		return nil, err
	}
	fx := &Fix{Description: fmt.Sprintf("Remove ipc: %s.", mode), Service: plan.Service, Keys: []string{"ipc"}, Edits: edits}
	if plan.Mount != nil {
		return fx, nil
	}
	size := keepSize(plan)
	if plan.Configured == nil || size != *plan.Configured {
		es, err := p.Project.setKey(plan.Service, ShmKey, ComposeSize(size))
		if err != nil {
			return nil, err
		}
		fx.Edits, fx.Keys = append(fx.Edits, es...), append(fx.Keys, ShmKey)
		fx.Description = fmt.Sprintf("Remove ipc: %s and set shm_size: %s.", mode, ComposeSize(size))
	}
	return fx, p.fits(plan, size)
}

// fixMoveBuild moves build.shm_size to the service, raised to what the workload needs.
func (p *Pass) fixMoveBuild() (*Fix, error) {
	plan := p.Plan
	size := *plan.BuildShmSize
	if size < plan.Target() {
		size = recommend(plan)
	}
	if size == 0 {
		return nil, errors.New("build.shm_size is 0, the daemon default: there is no size to move")
	}
	if err := p.fits(plan, size); err != nil {
		return nil, err
	}
	ws, _ := p.Project.Index.writtenAll(plan.Service, "build", ShmKey)
	text, desc := ComposeSize(size), "Move build.shm_size to the service."
	if size != *plan.BuildShmSize {
		desc = fmt.Sprintf("Replace build.shm_size by shm_size: %s on the service.", text)
	} else if len(ws) > 0 {
		if s, err := p.Project.Index.source(ws[0].file); err == nil {
			if raw, ok := s.scalarRaw(ws[0].val); ok {
				text = raw // as written: quoting and variables move with it
			}
		}
	}
	removed, err := p.Project.removeKeys(plan.Service, nil, "build", ShmKey)
	if err != nil {
		return nil, err
	}
	added, err := p.Project.setKey(plan.Service, ShmKey, text)
	if err != nil {
		return nil, err
	}
	return &Fix{Description: desc, Service: plan.Service, Keys: []string{"build.shm_size", ShmKey}, Edits: append(removed, added...)}, nil
}

// fixUlimits adds or corrects the ulimits entries missing from a GPU service.
func (p *Pass) fixUlimits(missing []entry) (*Fix, error) {
	svc, ix := p.Plan.Service, p.Project.Index
	var names []string
	for _, m := range missing {
		names = append(names, m.key+": "+m.value)
	}
	fx := &Fix{Description: "Add the ulimits NVIDIA recommends: " + strings.Join(names, ", ") + ".", Service: svc, Keys: []string{"ulimits"}}
	var add []entry
	for _, m := range missing {
		ws, _ := ix.writtenAll(svc, "ulimits", m.key)
		if len(ws) == 0 {
			add = append(add, m)
			continue
		}
		w := ws[0]
		if w.shared {
			return nil, p.Project.sharedErr(w, []string{"ulimits", m.key})
		}
		if deref(w.val).Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("ulimits.%s at %s is written with soft and hard limits: edit it by hand", m.key, ix.pos(w.file, w.key))
		}
		s, err := ix.source(w.file)
		if err != nil {
			return nil, err
		}
		e, err := s.setScalar(w.val, m.value)
		if err != nil {
			return nil, err
		}
		fx.Edits = append(fx.Edits, e)
	}
	if len(add) == 0 {
		return fx, nil
	}
	ws, reset := ix.writtenAll(svc, "ulimits")
	switch {
	case len(ws) > 0:
		w := ws[0]
		if _, in := ix.inAnchor(w.file, deref(w.val)); w.shared || in {
			return nil, p.Project.sharedErr(w, []string{"ulimits"})
		}
		s, err := ix.source(w.file)
		if err != nil {
			return nil, err
		}
		e, err := s.addEntries(w.key, deref(w.val), ix.layout(w.file), add)
		if err != nil {
			return nil, err
		}
		fx.Edits = append(fx.Edits, e)
	case reset:
		return nil, fmt.Errorf("ulimits of service %s are cleared with !reset or !override: edit them by hand", svc)
	default:
		es, err := p.Project.insertKeys(svc, []entry{{key: "ulimits", below: add}})
		if err != nil {
			return nil, err
		}
		fx.Edits = append(fx.Edits, es...)
	}
	return fx, nil
}

// fixShareable makes the first donor of an ipc: service: chain shareable, when its ipc is
// the private default: any other mode is a choice a fix must not undo.
func (p *Pass) fixShareable(donor *ShmPlan) (*Fix, error) {
	if donor.IPC != "" && donor.IPC != "private" {
		return nil, nil
	}
	es, err := p.Project.setKey(donor.Service, "ipc", "shareable")
	if err != nil {
		return nil, err
	}
	return &Fix{Description: fmt.Sprintf("Set ipc: shareable on service %s.", donor.Service), Service: donor.Service, Keys: []string{"ipc"}, Edits: es}, nil
}

// fixTmpfsSize sizes the tmpfs mounted at /dev/shm: the size= option of a tmpfs entry, or
// tmpfs.size of a volumes entry.
func (p *Pass) fixTmpfsSize(size int64) (*Fix, error) {
	plan := p.Plan
	if err := memFits(plan, size); err != nil {
		return nil, err
	}
	w, ok := p.Project.Index.lookupItem(plan.Service, plan.Mount.Entry, shmItem(plan))
	if !ok {
		return nil, errors.New("the /dev/shm mount is not written where the doctor can edit it")
	}
	if w.shared {
		return nil, p.Project.sharedErr(w, []string{plan.Mount.Entry})
	}
	s, err := p.Project.Index.source(w.file)
	if err != nil {
		return nil, err
	}
	text := ComposeSize(size)
	fx := &Fix{Description: fmt.Sprintf("Size the /dev/shm tmpfs to %s.", text), Service: plan.Service, Keys: []string{plan.Mount.Entry}}
	var e Edit
	switch n := w.val; n.Kind {
	case yaml.ScalarNode: // /dev/shm[:options]
		if strings.Contains(n.Value, "$") {
			return nil, fmt.Errorf("the tmpfs entry at %s is written with a variable: edit it by hand", s.at(n))
		}
		target, opts, _ := strings.Cut(n.Value, ":")
		var keep []string
		for _, o := range strings.Split(opts, ",") {
			if o != "" && !strings.HasPrefix(o, "size=") {
				keep = append(keep, o)
			}
		}
		e, err = s.setScalar(n, target+":"+strings.Join(append(keep, "size="+text), ","))
	case yaml.MappingNode: // type: tmpfs, target: /dev/shm
		l := p.Project.Index.layout(w.file)
		tk, tv, _ := findKey(n, "tmpfs")
		switch {
		case tk == nil:
			e, err = s.addEntries(nil, n, l, []entry{{key: "tmpfs", below: []entry{{key: "size", value: text}}}})
		case deref(tv).Kind != yaml.MappingNode || tv.Kind == yaml.AliasNode:
			return nil, fmt.Errorf("tmpfs at %s is not a mapping of its own: edit it by hand", s.at(tk))
		default:
			if sk, sv, _ := findKey(tv, "size"); sk != nil {
				e, err = s.setScalar(sv, text)
			} else {
				e, err = s.addEntries(tk, tv, l, []entry{{key: "size", value: text}})
			}
		}
	}
	if err != nil {
		return nil, err
	}
	fx.Edits = []Edit{e}
	return fx, nil
}

// k8sFits refuses an emptyDir size the container's memory limit cannot hold (SHM104 would
// follow). Without a memory limit the sizeLimit the fix writes caps the volume.
func k8sFits(plan *ShmPlan, size int64) error {
	if plan.MemLimit != nil && size >= *plan.MemLimit {
		return fmt.Errorf("the memory limit %s cannot hold a /dev/shm of %s: raise resources.limits.memory first", FormatSize(*plan.MemLimit), FormatSize(size))
	}
	return nil
}

// fixK8sVolume mounts a new memory emptyDir at /dev/shm: a volumeMounts entry in the
// container and a volumes entry in its pod spec.
func (p *Pass) fixK8sVolume(size int64) (*Fix, error) {
	plan, k := p.Plan, p.Plan.K8s
	if err := k8sFits(plan, size); err != nil {
		return nil, err
	}
	s, err := p.Project.Index.source(k.file)
	if err != nil {
		return nil, err
	}
	for _, n := range []*yaml.Node{k.container, k.spec} {
		if a, in := p.Project.Index.inAnchor(k.file, n); in {
			return nil, fmt.Errorf("the pod spec at %s is shared through the YAML anchor &%s: edit it by hand", s.at(n), a)
		}
	}
	const name = "dshm"
	for _, v := range seq(get(k.spec, "volumes")) {
		if scalar(get(v, "name")) == name {
			return nil, fmt.Errorf("the pod already has a volume named %s at %s: mount a memory emptyDir at /dev/shm by hand", name, s.at(v))
		}
	}
	l := p.Project.Index.layout(k.file)
	mount, err := s.addItem(k.container, "volumeMounts", l, []entry{{key: "name", value: name}, {key: "mountPath", value: "/dev/shm"}})
	if err != nil {
		return nil, err
	}
	volume, err := s.addItem(k.spec, "volumes", l, []entry{{key: "name", value: name}, {key: "emptyDir", below: []entry{
		{key: "medium", value: "Memory"}, {key: "sizeLimit", value: K8sSize(size)}}}})
	if err != nil {
		return nil, err
	}
	return &Fix{
		Description: fmt.Sprintf("Mount a memory emptyDir of %s at /dev/shm.", K8sSize(size)),
		Service:     plan.Service, Keys: []string{"volumeMounts", "volumes"}, Edits: []Edit{mount, volume},
	}, nil
}

// fixK8sEmptyDir makes the emptyDir at /dev/shm memory-backed with a sizeLimit of size.
func (p *Pass) fixK8sEmptyDir(size int64) (*Fix, error) {
	plan, k := p.Plan, p.Plan.K8s
	if err := k8sFits(plan, size); err != nil {
		return nil, err
	}
	s, err := p.Project.Index.source(k.file)
	if err != nil {
		return nil, err
	}
	if a, in := p.Project.Index.inAnchor(k.file, k.volume); in {
		return nil, fmt.Errorf("volume %s at %s is shared through the YAML anchor &%s: edit it by hand", k.Volume, s.at(k.volume), a)
	}
	key, raw, _ := findKey(k.volume, "emptyDir")
	if key == nil || raw.Kind == yaml.AliasNode || raw.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the emptyDir of volume %s is not a mapping of its own: edit it by hand", k.Volume)
	}
	fx := &Fix{Description: fmt.Sprintf("Set the sizeLimit of the /dev/shm emptyDir to %s.", K8sSize(size)), Service: plan.Service, Keys: []string{"volumes"}}
	if plan.Source != SourceEmptyDirMemory {
		fx.Description = fmt.Sprintf("Make the /dev/shm emptyDir memory-backed with a sizeLimit of %s.", K8sSize(size))
	}
	var add []entry
	for _, kv := range [][2]string{{"medium", "Memory"}, {"sizeLimit", K8sSize(size)}} {
		vk, vv, _ := findKey(raw, kv[0])
		if vk == nil {
			add = append(add, entry{key: kv[0], value: kv[1]})
			continue
		}
		e, err := s.setScalar(vv, kv[1])
		if err != nil {
			return nil, err
		}
		if e.Old != e.New {
			fx.Edits = append(fx.Edits, e)
		}
	}
	if len(add) > 0 {
		e, err := s.addEntries(key, raw, p.Project.Index.layout(k.file), add)
		if err != nil {
			return nil, err
		}
		fx.Edits = append(fx.Edits, e)
	}
	return fx, nil
}
