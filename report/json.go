package report

import (
	"io"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// jsonVersion is the version of the JSON shape; fields are only ever added within a version.
const jsonVersion = 1

type jsonReport struct {
	Version   int           `json:"version"`
	Tool      jsonTool      `json:"tool"`
	Projects  []jsonProject `json:"projects"`
	Summary   Summary       `json:"summary"`
	ProbeNote string        `json:"probe_note,omitempty"`
	Config    string        `json:"config,omitempty"`
}

type jsonTool struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

type jsonProject struct {
	Name     string            `json:"name"`
	Dir      string            `json:"dir,omitempty"`
	Files    []string          `json:"files"`
	Services []jsonService     `json:"services"`
	Findings []analyze.Finding `json:"findings"`
	Errors   []jsonError       `json:"errors"`
	Notes    []string          `json:"notes,omitempty"`
	Variant  *jsonVariant      `json:"variant,omitempty"`
}

// jsonVariant says how -r checked a compose file found beside the default names.
type jsonVariant struct {
	*analyze.Variant
	Mode      string `json:"mode"`
	CheckedAs string `json:"checked_as"`
}

type jsonService struct {
	Name  string     `json:"name"`
	Shm   jsonShm    `json:"shm"`
	Probe *jsonProbe `json:"probe,omitempty"`
}

// jsonProbe is a measurement with every documented key present: null where nothing was
// measured, "error" holding Docker's own message when the container was refused.
type jsonProbe struct {
	*analyze.Measurement
	Write   analyze.Write `json:"write"`
	Memlock *string       `json:"memlock"`
	Stack   *string       `json:"stack"`
	Error   *string       `json:"error"`
}

func probeJSON(m *analyze.Measurement) *jsonProbe {
	if m == nil {
		return nil
	}
	p := &jsonProbe{Measurement: m, Write: analyze.Write{Outcome: analyze.WriteSkipped}}
	if m.Write != nil {
		p.Write = *m.Write
	}
	if m.Memlock != "" {
		p.Memlock = &m.Memlock
	}
	if m.Stack != "" {
		p.Stack = &m.Stack
	}
	switch {
	case m.CreateError != "":
		p.Error = &m.CreateError
	case m.Error != "":
		p.Error = &m.Error
	}
	return p
}

type jsonShm struct {
	Source           analyze.Source       `json:"source"`
	IPC              string               `json:"ipc,omitempty"`
	Donor            string               `json:"donor,omitempty"`
	Via              []string             `json:"via,omitempty"`
	ConfiguredBytes  *int64               `json:"configured_bytes"`
	PredictedBytes   *int64               `json:"predicted_bytes"`
	MemoryLimitBytes *int64               `json:"memory_limit_bytes"`
	Profile          *string              `json:"profile"`
	Workload         *jsonWorkload        `json:"workload,omitempty"`
	NeedBytes        *int64               `json:"need_bytes"`
	NeedFrom         string               `json:"need_from,omitempty"`
	Mount            *jsonMount           `json:"mount,omitempty"`
	GPU              bool                 `json:"gpu"`
	Ignored          []analyze.IgnoredKey `json:"ignored,omitempty"`
	Unresolved       []jsonUnresolved     `json:"unresolved,omitempty"`
	Notes            []string             `json:"notes,omitempty"`
	Kubernetes       *jsonK8s             `json:"kubernetes,omitempty"`
}

// jsonK8s names the Kubernetes object and container a service stands for.
type jsonK8s struct {
	Kind         string   `json:"kind"`
	Namespace    string   `json:"namespace,omitempty"`
	Name         string   `json:"name"`
	Group        string   `json:"group,omitempty"`
	Container    string   `json:"container"`
	Role         string   `json:"role,omitempty"` // "init container" or "sidecar container"
	Pod          string   `json:"pod"`            // the pod spec's name: what pod-wide findings name
	Volume       string   `json:"volume,omitempty"`
	Medium       string   `json:"medium,omitempty"`
	Operator     string   `json:"operator,omitempty"` // the controller that mounts the volume
	HostIPC      bool     `json:"host_ipc,omitempty"`
	PodMemory    *int64   `json:"pod_memory_limit_bytes"`
	Accelerators []string `json:"accelerators,omitempty"`
}

type jsonMount struct {
	Type      analyze.Source `json:"type"`
	Source    string         `json:"source,omitempty"`
	SizeBytes *int64         `json:"size_bytes"`
	ReadOnly  bool           `json:"read_only,omitempty"`
}

type jsonUnresolved struct {
	Key  string   `json:"key"`
	Vars []string `json:"vars"`
}

type jsonError struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// JSON writes the report as one JSON document. Suppressed findings are counted in the
// summary and listed, each with its "suppressed" object, only with Options.ShowSuppressed:
// a consumer that predates suppressions keeps seeing only what is reported. Strings from the
// input are escaped as Visible escapes them, as in every format: a consumer reads the
// escapes a terminal shows.
func JSON(w io.Writer, r *Report, o Options) error {
	out := jsonReport{Version: jsonVersion, Tool: jsonTool{Name: "shmdoctor", Version: r.Version}, Summary: r.Summarize(), ProbeNote: r.ProbeNote, Config: r.Config, Projects: []jsonProject{}}
	for _, p := range r.Projects {
		jp := jsonProject{Name: p.Name, Dir: p.DisplayDir(), Files: p.Files, Services: []jsonService{}, Findings: p.Shown(o), Errors: []jsonError{}, Notes: p.Notes}
		if jp.Files == nil {
			jp.Files = []string{}
		}
		if jp.Findings == nil {
			jp.Findings = []analyze.Finding{}
		}
		if v := p.Variant; v != nil {
			jp.Variant = &jsonVariant{Variant: v, Mode: v.Mode(), CheckedAs: v.CheckedAs()}
		}
		for _, e := range p.Errors {
			jp.Errors = append(jp.Errors, jsonError{File: e.File, Line: e.Line, Column: e.Column, Message: e.Msg})
		}
		for _, plan := range p.Plans {
			s := jsonService{Name: plan.Service, Shm: shmJSON(plan)}
			if p.Measurements != nil {
				s.Probe = probeJSON(p.Measurements[plan.Service])
			}
			jp.Services = append(jp.Services, s)
		}
		out.Projects = append(out.Projects, jp)
	}
	return encodeJSON(w, out, "  ")
}

// jsonWorkload is what the workload's parameters say of its /dev/shm use.
type jsonWorkload struct {
	Name      string       `json:"name"`
	Uses      bool         `json:"uses_shm"`
	NeedBytes *int64       `json:"need_bytes,omitempty"`
	Formula   string       `json:"formula,omitempty"`
	Unknown   string       `json:"unknown,omitempty"`
	Why       string       `json:"why,omitempty"`
	Failure   string       `json:"failure,omitempty"`
	Evidence  []string     `json:"evidence,omitempty"`
	Sources   []jsonSource `json:"sources,omitempty"`
}

type jsonSource struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

func shmJSON(p *analyze.ShmPlan) jsonShm {
	s := jsonShm{
		Source: p.Source, IPC: p.Shown(p.IPC), Donor: p.Shown(p.Donor), Via: shownAll(p, p.Via),
		ConfiguredBytes: p.Configured, PredictedBytes: p.Predicted, MemoryLimitBytes: p.MemLimit,
		NeedBytes: p.Need, NeedFrom: p.NeedFrom, GPU: p.GPU, Ignored: p.Ignored, Notes: p.Notes,
	}
	if p.Profile != nil {
		s.Profile = &p.Profile.ID
	}
	if u := p.Use; u != nil {
		w := &jsonWorkload{Name: u.Workload, Uses: u.Uses(), Formula: p.Shown(u.Formula), Unknown: p.Shown(u.Unknown), Why: p.Shown(u.Why)}
		if u.Sized() {
			w.NeedBytes = &u.Need
			w.Failure = "crash"
			if u.Failure == analyze.Slows {
				w.Failure = "slower"
			}
		}
		for _, e := range u.Evidence {
			w.Evidence = append(w.Evidence, p.Shown(e))
		}
		for _, src := range u.Sources {
			w.Sources = append(w.Sources, jsonSource{Name: src.Name, URL: src.URL})
		}
		s.Workload = w
	}
	if p.Mount != nil {
		s.Mount = &jsonMount{Type: p.Mount.Type, Source: p.Shown(p.Mount.Source), SizeBytes: p.Mount.Size, ReadOnly: p.Mount.ReadOnly}
	}
	if k := p.K8s; k != nil {
		s.Kubernetes = &jsonK8s{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, Group: k.Group, Container: k.Container, Role: k.Role, Pod: k.Pod,
			Volume: k.Volume, Medium: k.Medium, Operator: k.Operator, HostIPC: k.HostIPC, Accelerators: k.Accelerators}
		if k.AllLimited {
			s.Kubernetes.PodMemory = k.PodMemLimit
		}
	}
	for _, u := range p.Unresolved {
		s.Unresolved = append(s.Unresolved, jsonUnresolved{Key: u.Key, Vars: u.Vars})
	}
	return s
}

// shownAll is Shown for each text of a list.
func shownAll(p *analyze.ShmPlan, list []string) []string {
	var out []string
	for _, s := range list {
		out = append(out, p.Shown(s))
	}
	return out
}
