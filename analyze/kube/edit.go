package kube

import (
	"errors"
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/fix"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// The manifest is its model's Document.

// FilesRead lists every file read, as displayed.
func (p *manifest) FilesRead() []string { return p.set.Files() }

// Display is a file's name as reports show it.
func (p *manifest) Display(path string) string { return p.set.Display(path) }

// Content is the manifest as it was loaded.
func (p *manifest) Content(path string) ([]byte, bool) {
	b, ok := p.set.Src[path]
	return b, ok
}

// KeyPos: a manifest has no compose keys.
func (p *manifest) KeyPos(string, ...string) (analyze.Pos, bool) { return analyze.Pos{}, false }

// ServicePos is the manifest's own position: containers are located by their K8sPlan.
func (p *manifest) ServicePos(string) analyze.Pos { return analyze.Pos{File: p.set.Display(p.abs)} }

// MountPos: a container's mount is located by its K8sPlan.
func (p *manifest) MountPos(*analyze.ShmPlan) (analyze.Pos, bool) { return analyze.Pos{}, false }

// Reads reports whether file, as named or as displayed, is the manifest.
func (p *manifest) Reads(file string) bool { return file == p.abs || file == p.set.Display(p.abs) }

var errNotCompose = errors.New("a Kubernetes container has no compose keys")

// SetShmSize does not apply to a manifest.
func (p *manifest) SetShmSize(string, int64) (*analyze.Fix, error) { return nil, errNotCompose }

// SetKey does not apply to a manifest.
func (p *manifest) SetKey(string, string, string) ([]analyze.Edit, error) { return nil, errNotCompose }

// RemoveKey does not apply to a manifest.
func (p *manifest) RemoveKey(string, func(string) bool, ...string) ([]analyze.Edit, error) {
	return nil, errNotCompose
}

// Raw does not apply to a manifest.
func (p *manifest) Raw(string, ...string) (string, bool) { return "", false }

// SetUlimits does not apply to a manifest.
func (p *manifest) SetUlimits(string, []analyze.KeyValue) ([]analyze.Edit, error) {
	return nil, errNotCompose
}

// SizeTmpfs does not apply to a manifest.
func (p *manifest) SizeTmpfs(*analyze.ShmPlan, string) ([]analyze.Edit, error) {
	return nil, errNotCompose
}

// MountMemory mounts a new memory emptyDir of size at /dev/shm: a volumeMounts entry in
// the container and a volumes entry in its pod spec.
func (p *manifest) MountMemory(plan *analyze.ShmPlan, size string) ([]analyze.Edit, error) {
	k := p.nodes[plan.K8s]
	if k.spec == nil {
		return nil, errors.New("the pod that runs this container is not in this file: mount a memory emptyDir at /dev/shm there")
	}
	s, err := p.texts.Source(p.abs)
	if err != nil {
		return nil, err
	}
	for _, n := range []*yaml.Node{k.container, k.spec} {
		if a, in := p.texts.InAnchor(p.abs, n); in {
			return nil, fmt.Errorf("the pod spec at %s is shared through the YAML anchor &%s: edit it by hand", s.At(n), a)
		}
	}
	const name = "dshm"
	for _, v := range seq(source.Get(k.spec, "volumes")) {
		if source.Scalar(source.Get(v, "name")) == name {
			return nil, fmt.Errorf("the pod already has a volume named %s at %s: mount a memory emptyDir at /dev/shm by hand", name, s.At(v))
		}
	}
	l := p.texts.Layout(p.abs)
	mount, err := s.AddItem(k.container, "volumeMounts", l, []fix.Entry{{Key: "name", Value: name}, {Key: "mountPath", Value: "/dev/shm"}})
	if err != nil {
		return nil, err
	}
	volume, err := s.AddItem(k.spec, "volumes", l, []fix.Entry{{Key: "name", Value: name}, {Key: "emptyDir", Below: []fix.Entry{
		{Key: "medium", Value: "Memory"}, {Key: "sizeLimit", Value: size}}}})
	if err != nil {
		return nil, err
	}
	return []analyze.Edit{mount, volume}, nil
}

// SizeEmptyDir makes the emptyDir at /dev/shm memory-backed with a sizeLimit of size.
func (p *manifest) SizeEmptyDir(plan *analyze.ShmPlan, size string) ([]analyze.Edit, error) {
	k, n := plan.K8s, p.nodes[plan.K8s]
	s, err := p.texts.Source(p.abs)
	if err != nil {
		return nil, err
	}
	if a, in := p.texts.InAnchor(p.abs, n.volume); in {
		return nil, fmt.Errorf("volume %s at %s is shared through the YAML anchor &%s: edit it by hand", k.Volume, s.At(n.volume), a)
	}
	key, raw, _ := source.FindKey(n.volume, "emptyDir")
	if key == nil || raw.Kind == yaml.AliasNode || raw.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the emptyDir of volume %s is not a mapping of its own: edit it by hand", k.Volume)
	}
	var edits []analyze.Edit
	var add []fix.Entry
	for _, kv := range [][2]string{{"medium", "Memory"}, {"sizeLimit", size}} {
		vk, vv, _ := source.FindKey(raw, kv[0])
		if vk == nil {
			add = append(add, fix.Entry{Key: kv[0], Value: kv[1]})
			continue
		}
		e, err := s.SetScalar(vv, kv[1])
		if err != nil {
			return nil, err
		}
		if e.Old != e.New {
			edits = append(edits, e)
		}
	}
	if len(add) > 0 {
		e, err := s.AddEntries(key, raw, p.texts.Layout(p.abs), add)
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
	}
	return edits, nil
}
