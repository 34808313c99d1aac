package compose

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/compose-spec/compose-go/v2/format"
	"github.com/compose-spec/compose-go/v2/tree"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// refusedVolume stands in for a volumes entry compose-go cannot parse, so that the rest of
// the project loads: an anonymous volume at a path no rule reads.
const refusedVolume = "/shmdoctor-refused-volume-"

// volumeCast is where castVolume applies: the short syntax of a service's volumes.
var volumeCast = tree.NewPath("services", tree.PathMatchAll, "volumes", tree.PathMatchList)

// castVolume parses a short volumes entry as compose-go will; one it refuses (too many
// colons, an empty section) is recorded by its interpolated text and replaced by a stand-in.
func (p *project) castVolume(v string) (any, error) {
	if _, err := format.ParseVolume(v); err != nil {
		if p.badVolumes == nil {
			p.badVolumes = map[string]string{}
		}
		// The reason is compose-go's last words, without the spec it quotes.
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		p.badVolumes[v] = msg
		return fmt.Sprintf("%s%d", refusedVolume, len(p.badVolumes)), nil
	}
	return v, nil
}

// refusals lists what makes docker compose refuse a service as written: a required variable
// that is not set, a volumes entry it cannot parse or whose target is not absolute, a
// required env_file that does not exist. Each is placed at its entry; none carries a value.
func (p *project) refusals(plan *analyze.ShmPlan) {
	s := p.model.Services[plan.Service]
	for _, l := range p.Index.layers(plan.Service) {
		source.Scalars(l.node, "", func(_ string, v *yaml.Node) {
			if vars := p.env.requiredIn(v.Value); len(vars) > 0 {
				plan.Refusals = append(plan.Refusals, analyze.Refusal{Pos: p.Index.Pos(l.file, v),
					Msg: fmt.Sprintf("required variable %s is not set: docker compose stops at this value", strings.Join(vars, ", ")), Environment: true})
			}
		})
	}
	for spec, why := range p.badVolumes {
		if _, at, ok := p.Index.LookupItem(plan.Service, "volumes", func(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Value == spec }); ok {
			plan.Refusals = append(plan.Refusals, analyze.Refusal{Pos: at, Msg: "volumes entry docker compose cannot parse: " + why})
		}
	}
	for _, v := range s.Volumes {
		if strings.HasPrefix(v.Target, refusedVolume) || v.Target == "" || path.IsAbs(v.Target) || isWindowsPath(v.Target) {
			continue
		}
		_, at, ok := p.Index.LookupItem(plan.Service, "volumes", func(n *yaml.Node) bool {
			if n.Kind == yaml.MappingNode {
				return source.Scalar(source.Get(n, "target")) == v.Target
			}
			parsed, err := format.ParseVolume(n.Value)
			return err == nil && parsed.Target == v.Target
		})
		if !ok {
			at = p.keyPos(plan, "volumes")
		}
		plan.Refusals = append(plan.Refusals, analyze.Refusal{Pos: at, Msg: "volumes entry with a target that is not an absolute path: the engine refuses to create the container"})
	}
	for _, f := range s.EnvFiles {
		if !f.Required || strings.HasPrefix(f.Path, placeholder) {
			continue
		}
		if _, inside := p.root.Resolve(f.Path); !inside {
			continue // not looked at: a note says so
		}
		if _, err := os.Stat(f.Path); errors.Is(err, fs.ErrNotExist) {
			at, _ := p.envFileEntry(plan.Service, f.Path)
			plan.Refusals = append(plan.Refusals, analyze.Refusal{Pos: at, Msg: fmt.Sprintf("required env_file %s does not exist: docker compose stops at it", p.Index.Display(f.Path)), Environment: true})
		}
	}
}

// isWindowsPath is a target such as C:\data, which compose-go reads for Windows containers.
func isWindowsPath(t string) bool {
	return len(t) >= 3 && t[1] == ':' && (t[2] == '\\' || t[2] == '/')
}
