package compose

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/fix"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// The project is its model's Document.

// FilesRead lists every file read, as displayed, in the order read.
func (p *project) FilesRead() []string { return p.Index.Files() }

// Display is a file's name as reports show it.
func (p *project) Display(path string) string { return p.Index.Display(path) }

// Content is a file as it was loaded.
func (p *project) Content(path string) ([]byte, bool) {
	b, ok := p.Index.Src[path]
	return b, ok
}

// KeyPos is where the winning value of a service key is written.
func (p *project) KeyPos(service string, key ...string) (analyze.Pos, bool) {
	_, pos, ok := p.Index.Lookup(service, key...)
	return pos, ok
}

// ServicePos is the position of a service's name, else of the project's first file.
func (p *project) ServicePos(service string) analyze.Pos { return p.Index.ServicePos(service) }

// MountPos is the tmpfs or volumes entry that mounts something at /dev/shm.
func (p *project) MountPos(plan *analyze.ShmPlan) (analyze.Pos, bool) {
	_, pos, ok := p.mountNode(plan)
	return pos, ok
}

// SetKey gives a service key a scalar value.
func (p *project) SetKey(service, key, value string) ([]analyze.Edit, error) {
	return p.setKey(service, key, value)
}

// RemoveKey removes a service key wherever it is written, or where match accepts its value.
func (p *project) RemoveKey(service string, match func(string) bool, path ...string) ([]analyze.Edit, error) {
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
	s, err := p.Index.Source(ws[0].file)
	if err != nil {
		return "", false
	}
	return s.ScalarRaw(ws[0].val)
}

// MountMemory does not apply to a compose project.
func (p *project) MountMemory(*analyze.ShmPlan, string) ([]analyze.Edit, error) {
	return nil, errors.New("a compose service has no pod volumes")
}

// SizeEmptyDir does not apply to a compose project.
func (p *project) SizeEmptyDir(*analyze.ShmPlan, string) ([]analyze.Edit, error) {
	return nil, errors.New("a compose service has no emptyDir")
}

// SetShmSize makes the fix that gives a compose service the shm_size size: it replaces
// the value where the winning shm_size is written, keeping its quoting, or adds the key to
// the service's own definition. It does not judge the size: the memory limit, ipc: host
// and mounts at /dev/shm are the caller's to weigh.
func (p *project) SetShmSize(service string, size int64) (*analyze.Fix, error) {
	if p.model == nil || p.Index == nil {
		return nil, fmt.Errorf("project %s is not a loaded compose project", p.Name)
	}
	if p.Plan(service) == nil {
		return nil, fmt.Errorf("project %s has no service %s", p.Name, service)
	}
	if size < 0 {
		return nil, fmt.Errorf("shm_size %d is negative", size)
	}
	edits, err := p.setKey(service, analyze.ShmKey, analyze.ComposeSize(size))
	if err != nil {
		return nil, err
	}
	return &analyze.Fix{
		Description: fmt.Sprintf("Set shm_size: %s on service %s.", analyze.ComposeSize(size), service),
		Service:     service, Keys: []string{analyze.ShmKey}, Edits: edits,
	}, nil
}

// removeKeys removes a service key wherever it is written (every file, so that no lower
// layer takes over), or only where match accepts its value.
func (p *project) removeKeys(service string, match func(*yaml.Node) bool, path ...string) ([]analyze.Edit, error) {
	ws, _ := p.Index.writtenAll(service, path...)
	var out []analyze.Edit
	for _, w := range ws {
		if match != nil && !match(source.Deref(w.val)) {
			continue
		}
		if w.shared {
			return nil, p.sharedErr(w, path)
		}
		s, err := p.Index.Source(w.file)
		if err != nil {
			return nil, err
		}
		var e analyze.Edit
		if home, _ := p.Index.home(service); len(w.parent.Content) == 2 && len(path) == 1 && w.layer.node != home.node {
			// an override that sets nothing else: keep the service, overriding nothing
			e, err = s.EmptyMapping(w.parentKey, w.parent)
		} else {
			e, err = s.RemoveEntry(w.parent, w.key, w.val)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func (p *project) sharedErr(w written, path []string) error {
	return fmt.Errorf("%s at %s comes from a YAML anchor that other services may share: edit it by hand", strings.Join(path, "."), p.Index.Pos(w.file, w.key))
}

// setKey gives a service key a scalar value: where the winning value is written, or added
// to the service's own definition.
func (p *project) setKey(service, key, value string) ([]analyze.Edit, error) {
	ws, reset := p.Index.writtenAll(service, key)
	if len(ws) == 0 {
		if reset {
			return nil, fmt.Errorf("%s of service %s is cleared with !reset or !override: edit it by hand", key, service)
		}
		return p.insertKeys(service, []fix.Entry{{Key: key, Value: value}})
	}
	w := ws[0]
	if w.shared {
		return nil, p.sharedErr(w, []string{key})
	}
	if strings.Contains(source.Deref(w.val).Value, "$") {
		return nil, fmt.Errorf("%s at %s is written with a variable: edit it by hand", key, p.Index.Pos(w.file, w.key))
	}
	s, err := p.Index.Source(w.file)
	if err != nil {
		return nil, err
	}
	e, err := s.SetScalar(w.val, value)
	if err != nil || e.Old == e.New {
		return nil, err
	}
	return []analyze.Edit{e}, nil
}

// insertKeys adds keys to the service's own definition.
func (p *project) insertKeys(service string, es []fix.Entry) ([]analyze.Edit, error) {
	l, ok := p.Index.home(service)
	if !ok {
		return nil, fmt.Errorf("service %s is not written in any file", service)
	}
	if a, in := p.Index.InAnchor(l.file, l.node); in {
		return nil, fmt.Errorf("service %s is the YAML anchor &%s, which other services merge: edit it by hand", service, a)
	}
	if l.shared {
		return nil, fmt.Errorf("service %s is an alias of a YAML anchor other services share: edit it by hand", service)
	}
	s, err := p.Index.Source(l.file)
	if err != nil {
		return nil, err
	}
	e, err := s.InsertEntries(l.node, p.Index.Layout(l.file), es)
	if err != nil {
		return nil, err
	}
	return []analyze.Edit{e}, nil
}

// SizeTmpfs sizes the tmpfs mounted at /dev/shm: the size= option of a tmpfs entry, or
// tmpfs.size of a volumes entry.
func (p *project) SizeTmpfs(plan *analyze.ShmPlan, text string) ([]analyze.Edit, error) {
	w, ok := p.Index.lookupItem(plan.Service, plan.Mount.Entry, shmItem(plan))
	if !ok {
		return nil, errors.New("the /dev/shm mount is not written where the doctor can edit it")
	}
	if w.shared {
		return nil, p.sharedErr(w, []string{plan.Mount.Entry})
	}
	s, err := p.Index.Source(w.file)
	if err != nil {
		return nil, err
	}
	var e analyze.Edit
	switch n := w.val; n.Kind {
	case yaml.ScalarNode: // /dev/shm[:options]
		if strings.Contains(n.Value, "$") {
			return nil, fmt.Errorf("the tmpfs entry at %s is written with a variable: edit it by hand", s.At(n))
		}
		target, opts, _ := strings.Cut(n.Value, ":")
		var keep []string
		for _, o := range strings.Split(opts, ",") {
			if o != "" && !strings.HasPrefix(o, "size=") {
				keep = append(keep, o)
			}
		}
		e, err = s.SetScalar(n, target+":"+strings.Join(append(keep, "size="+text), ","))
	case yaml.MappingNode: // type: tmpfs, target: /dev/shm
		l := p.Index.Layout(w.file)
		tk, tv, _ := source.FindKey(n, "tmpfs")
		switch {
		case tk == nil:
			e, err = s.AddEntries(nil, n, l, []fix.Entry{{Key: "tmpfs", Below: []fix.Entry{{Key: "size", Value: text}}}})
		case source.Deref(tv).Kind != yaml.MappingNode || tv.Kind == yaml.AliasNode:
			return nil, fmt.Errorf("tmpfs at %s is not a mapping of its own: edit it by hand", s.At(tk))
		default:
			if sk, sv, _ := source.FindKey(tv, "size"); sk != nil {
				e, err = s.SetScalar(sv, text)
			} else {
				e, err = s.AddEntries(tk, tv, l, []fix.Entry{{Key: "size", Value: text}})
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return []analyze.Edit{e}, nil
}

// SetUlimits sets ulimits entries of a service to scalar values, adding those missing.
func (p *project) SetUlimits(svc string, entries []analyze.KeyValue) ([]analyze.Edit, error) {
	ix := p.Index
	var missing []fix.Entry
	for _, kv := range entries {
		missing = append(missing, fix.Entry{Key: kv.Key, Value: kv.Value})
	}
	var edits []analyze.Edit
	var add []fix.Entry
	for _, m := range missing {
		ws, _ := ix.writtenAll(svc, "ulimits", m.Key)
		if len(ws) == 0 {
			add = append(add, m)
			continue
		}
		w := ws[0]
		if w.shared {
			return nil, p.sharedErr(w, []string{"ulimits", m.Key})
		}
		if source.Deref(w.val).Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("ulimits.%s at %s is written with soft and hard limits: edit it by hand", m.Key, ix.Pos(w.file, w.key))
		}
		s, err := ix.Source(w.file)
		if err != nil {
			return nil, err
		}
		e, err := s.SetScalar(w.val, m.Value)
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
		if _, in := ix.InAnchor(w.file, source.Deref(w.val)); w.shared || in {
			return nil, p.sharedErr(w, []string{"ulimits"})
		}
		s, err := ix.Source(w.file)
		if err != nil {
			return nil, err
		}
		e, err := s.AddEntries(w.key, source.Deref(w.val), ix.Layout(w.file), add)
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
	case reset:
		return nil, fmt.Errorf("ulimits of service %s are cleared with !reset or !override: edit them by hand", svc)
	default:
		es, err := p.insertKeys(svc, []fix.Entry{{Key: "ulimits", Below: add}})
		if err != nil {
			return nil, err
		}
		edits = append(edits, es...)
	}
	return edits, nil
}
