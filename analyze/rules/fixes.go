package rules

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// fits refuses a /dev/shm size that docker stack deploy would drop, or that the memory
// limit cannot hold: a fix must not trade its finding for SHM040 or SHM012.
func fits(p *analyze.Pass, plan *analyze.ShmPlan, size int64) error {
	if p.Config.Target == analyze.TargetSwarm {
		return errors.New("docker stack deploy ignores shm_size: size /dev/shm with a tmpfs volume instead (SHM040)")
	}
	return memFits(plan, size)
}

func memFits(plan *analyze.ShmPlan, size int64) error {
	for _, key := range []string{"mem_limit", "deploy.resources.limits.memory"} {
		if vars := plan.DependsOn(key); vars != nil {
			return fmt.Errorf("the memory limit depends on unset variables (%s): set them and fix again", strings.Join(vars, ", "))
		}
	}
	if plan.MemLimit != nil && size >= *plan.MemLimit {
		return fmt.Errorf("the memory limit %s cannot hold a /dev/shm of %s: raise it first, /dev/shm pages count against it", analyze.FormatSize(*plan.MemLimit), analyze.FormatSize(size))
	}
	return nil
}

// fixRemove removes a key of the service wherever it is written.
func fixRemove(p *analyze.Pass, desc string, path ...string) (*analyze.Fix, error) {
	edits, err := p.Project.Doc.RemoveKey(p.Plan.Service, nil, path...)
	if err != nil {
		return nil, err
	}
	return &analyze.Fix{Description: desc, Service: p.Plan.Service, Keys: []string{strings.Join(path, ".")}, Edits: edits}, nil
}

// fixShmSize sets a service's shm_size to size, if it fits.
func fixShmSize(p *analyze.Pass, plan *analyze.ShmPlan, size int64) (*analyze.Fix, error) {
	if err := fits(p, plan, size); err != nil {
		return nil, err
	}
	return p.Project.Doc.SetShmSize(plan.Service, size)
}

// fixPrivate removes the service's ipc mode (host or none) and, unless a mount decides
// /dev/shm, makes sure shm_size holds what the workload needs.
func fixPrivate(p *analyze.Pass) (*analyze.Fix, error) {
	plan := p.Plan
	mode := plan.IPC
	edits, err := p.Project.Doc.RemoveKey(plan.Service, func(v string) bool { return v == mode }, "ipc")
	if err != nil || len(edits) == 0 {
		return nil, err
	}
	fx := &analyze.Fix{Description: fmt.Sprintf("Remove ipc: %s.", mode), Service: plan.Service, Keys: []string{"ipc"}, Edits: edits}
	if plan.Mount != nil {
		return fx, nil
	}
	size, ok := adviseSize(plan)
	if !ok {
		return nil, errors.New("the workload's need is not known: measure it with shmdoctor watch before the doctor sizes a private /dev/shm")
	}
	if plan.Configured == nil || size != *plan.Configured {
		es, err := p.Project.Doc.SetKey(plan.Service, analyze.ShmKey, analyze.ComposeSize(size))
		if err != nil {
			return nil, err
		}
		fx.Edits, fx.Keys = append(fx.Edits, es...), append(fx.Keys, analyze.ShmKey)
		fx.Description = fmt.Sprintf("Remove ipc: %s and set shm_size: %s.", mode, analyze.ComposeSize(size))
	}
	return fx, fits(p, plan, size)
}

// fixMoveBuild moves build.shm_size to the service, raised to what the workload needs.
func fixMoveBuild(p *analyze.Pass) (*analyze.Fix, error) {
	plan := p.Plan
	size := *plan.BuildShmSize
	if size < plan.Target() {
		size = analyze.RecommendedSize(plan)
	}
	if size == 0 {
		return nil, errors.New("build.shm_size is 0, the daemon default: there is no size to move")
	}
	if err := fits(p, plan, size); err != nil {
		return nil, err
	}
	text, desc := analyze.ComposeSize(size), "Move build.shm_size to the service."
	if size != *plan.BuildShmSize {
		desc = fmt.Sprintf("Replace build.shm_size by shm_size: %s on the service.", text)
	} else if raw, ok := p.Project.Doc.Raw(plan.Service, "build", analyze.ShmKey); ok {
		text = raw // as written: quoting and variables move with it
	}
	removed, err := p.Project.Doc.RemoveKey(plan.Service, nil, "build", analyze.ShmKey)
	if err != nil {
		return nil, err
	}
	added, err := p.Project.Doc.SetKey(plan.Service, analyze.ShmKey, text)
	if err != nil {
		return nil, err
	}
	return &analyze.Fix{Description: desc, Service: plan.Service, Keys: []string{"build.shm_size", analyze.ShmKey}, Edits: append(removed, added...)}, nil
}

// fixShareable makes the first donor of an ipc: service: chain shareable, when its ipc is
// the private default: any other mode is a choice a fix must not undo.
func fixShareable(p *analyze.Pass, donor *analyze.ShmPlan) (*analyze.Fix, error) {
	if donor.IPC != "" && donor.IPC != "private" {
		return nil, nil
	}
	es, err := p.Project.Doc.SetKey(donor.Service, "ipc", "shareable")
	if err != nil {
		return nil, err
	}
	return &analyze.Fix{Description: fmt.Sprintf("Set ipc: shareable on service %s.", donor.Service), Service: donor.Service, Keys: []string{"ipc"}, Edits: es}, nil
}

// fixUlimits adds or corrects the ulimits entries missing from a GPU service.
func fixUlimits(p *analyze.Pass, missing []analyze.KeyValue) (*analyze.Fix, error) {
	var names []string
	for _, m := range missing {
		names = append(names, m.Key+": "+m.Value)
	}
	fx := &analyze.Fix{Description: "Add the ulimits NVIDIA recommends: " + strings.Join(names, ", ") + ".", Service: p.Plan.Service, Keys: []string{"ulimits"}}
	edits, err := p.Project.Doc.SetUlimits(p.Plan.Service, missing)
	if err != nil {
		return nil, err
	}
	fx.Edits = edits
	return fx, nil
}

// fixTmpfsSize sizes the tmpfs mounted at /dev/shm: the size= option of a tmpfs entry, or
// tmpfs.size of a volumes entry.
func fixTmpfsSize(p *analyze.Pass, size int64) (*analyze.Fix, error) {
	plan := p.Plan
	if err := memFits(plan, size); err != nil {
		return nil, err
	}
	text := analyze.ComposeSize(size)
	edits, err := p.Project.Doc.SizeTmpfs(plan, text)
	if err != nil {
		return nil, err
	}
	return &analyze.Fix{Description: fmt.Sprintf("Size the /dev/shm tmpfs to %s.", text), Service: plan.Service, Keys: []string{plan.Mount.Entry}, Edits: edits}, nil
}

// k8sFits refuses an emptyDir size the container's memory limit cannot hold (SHM104 would
// follow). Without a memory limit the sizeLimit the fix writes caps the volume.
func k8sFits(plan *analyze.ShmPlan, size int64) error {
	if plan.MemLimit != nil && size >= *plan.MemLimit {
		return fmt.Errorf("the memory limit %s cannot hold a /dev/shm of %s: raise resources.limits.memory first", analyze.FormatSize(*plan.MemLimit), analyze.FormatSize(size))
	}
	return nil
}

// fixK8sVolume mounts a new memory emptyDir at /dev/shm: a volumeMounts entry in the
// container and a volumes entry in its pod spec.
func fixK8sVolume(p *analyze.Pass, size int64) (*analyze.Fix, error) {
	plan := p.Plan
	if err := k8sFits(plan, size); err != nil {
		return nil, err
	}
	edits, err := p.Project.Doc.MountMemory(plan, analyze.K8sSize(size))
	if err != nil {
		return nil, err
	}
	return &analyze.Fix{
		Description: fmt.Sprintf("Mount a memory emptyDir of %s at /dev/shm.", analyze.K8sSize(size)),
		Service:     plan.Service, Keys: []string{"volumeMounts", "volumes"}, Edits: edits,
	}, nil
}

// fixK8sEmptyDir makes the emptyDir at /dev/shm memory-backed with a sizeLimit of size.
func fixK8sEmptyDir(p *analyze.Pass, size int64) (*analyze.Fix, error) {
	plan := p.Plan
	if err := k8sFits(plan, size); err != nil {
		return nil, err
	}
	edits, err := p.Project.Doc.SizeEmptyDir(plan, analyze.K8sSize(size))
	if err != nil {
		return nil, err
	}
	fx := &analyze.Fix{Description: fmt.Sprintf("Set the sizeLimit of the /dev/shm emptyDir to %s.", analyze.K8sSize(size)), Service: plan.Service, Keys: []string{"volumes"}, Edits: edits}
	if plan.Source != analyze.SourceEmptyDirMemory {
		fx.Description = fmt.Sprintf("Make the /dev/shm emptyDir memory-backed with a sizeLimit of %s.", analyze.K8sSize(size))
	}
	return fx, nil
}
