package analyze

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The project is its model's Document.

// FilesRead lists every file read, as displayed, in the order read.
func (p *project) FilesRead() []string { return p.Index.Files() }

// Display is a file's name as reports show it.
func (p *project) Display(path string) string { return p.Index.display(path) }

// Content is a file as it was loaded.
func (p *project) Content(path string) ([]byte, bool) {
	b, ok := p.Index.src[path]
	return b, ok
}

// KeyPos is where the winning value of a service key is written.
func (p *project) KeyPos(service string, key ...string) (Pos, bool) {
	_, pos, ok := p.Index.Lookup(service, key...)
	return pos, ok
}

// ServicePos is the position of a service's name, else of the project's first file.
func (p *project) ServicePos(service string) Pos { return p.Index.ServicePos(service) }

// MountPos is the tmpfs or volumes entry that mounts something at /dev/shm.
func (p *project) MountPos(plan *ShmPlan) (Pos, bool) {
	_, pos, ok := p.mountNode(plan)
	return pos, ok
}

// SetKey gives a service key a scalar value.
func (p *project) SetKey(service, key, value string) ([]Edit, error) {
	return p.setKey(service, key, value)
}

// RemoveKey removes a service key wherever it is written, or where match accepts its value.
func (p *project) RemoveKey(service string, match func(string) bool, path ...string) ([]Edit, error) {
	var m func(*yaml.Node) bool
	if match != nil {
		m = func(v *yaml.Node) bool { return match(v.Value) }
	}
	return p.removeKeys(service, m, path...)
}

// Raw is the winning value of a service key as written.
func (p *project) Raw(service string, path ...string) (string, bool) {
	ws, _ := p.Index.writtenAll(service, path...)
	if len(ws) == 0 {
		return "", false
	}
	s, err := p.Index.source(ws[0].file)
	if err != nil {
		return "", false
	}
	return s.scalarRaw(ws[0].val)
}

// MountMemory does not apply to a compose project.
func (p *project) MountMemory(*ShmPlan, string) ([]Edit, error) {
	return nil, errors.New("a compose service has no pod volumes")
}

// SizeEmptyDir does not apply to a compose project.
func (p *project) SizeEmptyDir(*ShmPlan, string) ([]Edit, error) {
	return nil, errors.New("a compose service has no emptyDir")
}

// SetShmSize makes the fix that gives a compose service the shm_size size: it replaces
// the value where the winning shm_size is written, keeping its quoting, or adds the key to
// the service's own definition. It does not judge the size: the memory limit, ipc: host
// and mounts at /dev/shm are the caller's to weigh.
func (p *project) SetShmSize(service string, size int64) (*Fix, error) {
	if p.model == nil || p.Index == nil {
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
func (p *project) removeKeys(service string, match func(*yaml.Node) bool, path ...string) ([]Edit, error) {
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

func (p *project) sharedErr(w written, path []string) error {
	return fmt.Errorf("%s at %s comes from a YAML anchor that other services may share: edit it by hand", strings.Join(path, "."), p.Index.pos(w.file, w.key))
}

// setKey gives a service key a scalar value: where the winning value is written, or added
// to the service's own definition.
func (p *project) setKey(service, key, value string) ([]Edit, error) {
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
func (p *project) insertKeys(service string, es []entry) ([]Edit, error) {
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

// SizeTmpfs sizes the tmpfs mounted at /dev/shm: the size= option of a tmpfs entry, or
// tmpfs.size of a volumes entry.
func (p *project) SizeTmpfs(plan *ShmPlan, text string) ([]Edit, error) {
	w, ok := p.Index.lookupItem(plan.Service, plan.Mount.Entry, shmItem(plan))
	if !ok {
		return nil, errors.New("the /dev/shm mount is not written where the doctor can edit it")
	}
	if w.shared {
		return nil, p.sharedErr(w, []string{plan.Mount.Entry})
	}
	s, err := p.Index.source(w.file)
	if err != nil {
		return nil, err
	}
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
		l := p.Index.layout(w.file)
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
	return []Edit{e}, nil
}

// SetUlimits sets ulimits entries of a service to scalar values, adding those missing.
func (p *project) SetUlimits(svc string, entries []KeyValue) ([]Edit, error) {
	ix := p.Index
	var missing []entry
	for _, kv := range entries {
		missing = append(missing, entry{key: kv.Key, value: kv.Value})
	}
	var edits []Edit
	var add []entry
	for _, m := range missing {
		ws, _ := ix.writtenAll(svc, "ulimits", m.key)
		if len(ws) == 0 {
			add = append(add, m)
			continue
		}
		w := ws[0]
		if w.shared {
			return nil, p.sharedErr(w, []string{"ulimits", m.key})
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
		edits = append(edits, e)
	}
	if len(add) == 0 {
		return edits, nil
	}
	ws, reset := ix.writtenAll(svc, "ulimits")
	switch {
	case len(ws) > 0:
		w := ws[0]
		if _, in := ix.inAnchor(w.file, deref(w.val)); w.shared || in {
			return nil, p.sharedErr(w, []string{"ulimits"})
		}
		s, err := ix.source(w.file)
		if err != nil {
			return nil, err
		}
		e, err := s.addEntries(w.key, deref(w.val), ix.layout(w.file), add)
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
	case reset:
		return nil, fmt.Errorf("ulimits of service %s are cleared with !reset or !override: edit them by hand", svc)
	default:
		es, err := p.insertKeys(svc, []entry{{key: "ulimits", below: add}})
		if err != nil {
			return nil, err
		}
		edits = append(edits, es...)
	}
	return edits, nil
}
