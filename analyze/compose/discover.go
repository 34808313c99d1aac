package compose

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/kube"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// isVariantName reports a file -r considers a compose file besides the default names: a
// .yml or .yaml whose name, or whose folder's name, contains "compose", in any case. It
// takes in what dclint (docker-compose-linter) discovers, ^(docker-)?compose.*\.ya?ml$,
// the names that put the variant first or a prefix before it (gpu.compose.yaml,
// ml-docker-compose.yml), and the stacks kept in a compose folder (deploy/compose/nims.yaml).
func isVariantName(path string) bool {
	has := func(s string) bool { return strings.Contains(strings.ToLower(s), "compose") }
	return kube.IsYAMLName(path) && (has(filepath.Base(path)) || has(filepath.Base(filepath.Dir(path))))
}

// isComposeContent reports YAML that is a compose file: a top-level services mapping or
// include list. Text that does not parse counts, so that its error is reported at its
// line rather than the file skipped.
func isComposeContent(b []byte) bool {
	root, ok := yamlRoot(b)
	if !ok {
		return true
	}
	s, inc := source.Deref(source.Get(root, "services")), source.Deref(source.Get(root, "include"))
	return s != nil && s.Kind == yaml.MappingNode || inc != nil && inc.Kind == yaml.SequenceNode
}

// composeTopKeys are the top-level keys of the compose specification.
var composeTopKeys = map[string]bool{"version": true, "name": true, "services": true, "networks": true,
	"volumes": true, "configs": true, "secrets": true, "include": true, "models": true}

// isUnmistakablyCompose reports YAML that is a compose file whatever its name
// (example/compute-ray.yaml): it parses, every top-level key is one of compose's (or x-),
// and services is a non-empty mapping whose every service has an image written as a
// string, a build or an extends. Helm values and CI files, which have services keys too,
// fail on their other keys or on an image written as a mapping.
func isUnmistakablyCompose(b []byte) bool {
	root, ok := yamlRoot(b)
	if !ok || root == nil {
		return false
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; !composeTopKeys[k] && !strings.HasPrefix(k, "x-") {
			return false
		}
	}
	services := source.Deref(source.Get(root, "services"))
	if services == nil || services.Kind != yaml.MappingNode || len(services.Content) == 0 {
		return false
	}
	for i := 1; i < len(services.Content); i += 2 {
		svc := source.Deref(services.Content[i])
		if svc.Kind != yaml.MappingNode {
			return false
		}
		img := source.Deref(source.Get(svc, "image"))
		if !(img != nil && img.Kind == yaml.ScalarNode || source.Get(svc, "build") != nil || source.Get(svc, "extends") != nil) {
			return false
		}
	}
	return true
}

// yamlRoot parses the first document: its root mapping, nil when it has none, and false
// when it does not parse.
func yamlRoot(b []byte) (*yaml.Node, bool) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&doc); err != nil {
		return nil, false
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, true
	}
	return doc.Content[0], true
}

// Reads reports whether the project read a file, as named by -r or as displayed, as one
// of its compose files or a file they include or extend.
func (p *project) Reads(file string) bool {
	if p == nil || p.Index == nil {
		return false
	}
	for _, f := range p.Index.Read {
		if f == file || p.Index.Display(f) == file {
			return true
		}
		if abs, err := filepath.Abs(file); err == nil && abs == f {
			return true
		}
	}
	return false
}

// overlayOf decides whether a variant is an overlay of the folder's default project, as
// docker compose would need to run it: the variant names services of the base that have
// no image or build in the variant, so alone they cannot be created (docker compose
// refuses "has neither an image nor a build context"), and -f base -f variant is how it
// is run. A variant whose services have an image, a build or an extends of their own is
// complete: it runs alone, and merging it would mix the base's settings (GPU reservations,
// volumes) into a stack that does not have them. It returns the services that take their
// image from the base, and why not when there are none.
func overlayOf(variant string, base *project) (names []string, why string) {
	if base == nil {
		return nil, "the folder has no default compose file"
	}
	if base.model == nil {
		return nil, base.firstFile() + " does not load"
	}
	b, err := source.ReadSource(base.Index.Input, variant)
	if err != nil {
		return nil, "it cannot be read"
	}
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return nil, "it does not parse"
	}
	services := source.Deref(source.Get(doc.Content[0], "services"))
	if services == nil || services.Kind != yaml.MappingNode {
		return nil, "it defines no services"
	}
	for i := 0; i+1 < len(services.Content); i += 2 {
		name, svc := services.Content[i].Value, source.Deref(services.Content[i+1])
		_, inBase := base.model.Services[name]
		if _, off := base.model.DisabledServices[name]; off {
			inBase = true
		}
		if inBase && source.Get(svc, "image") == nil && source.Get(svc, "build") == nil && source.Get(svc, "extends") == nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, "its services have an image or build of their own"
	}
	return names, ""
}

// model0 is the model of a project that may be nil.
func (p *project) model0() *analyze.Project {
	if p == nil {
		return nil
	}
	return p.Project
}

// firstFile is the project's first compose file, as displayed.
func (p *project) firstFile() string {
	if len(p.Files) > 0 {
		return p.Files[0]
	}
	return p.Name
}

// loadVariant loads a variant found by -r in t's folder: merged over the folder's default
// file when it is an overlay of it, alone otherwise or when the merge does not load.
func loadVariant(ctx context.Context, t target, base *project, file string, opts Options) *project {
	names, why := overlayOf(file, base)
	if names != nil {
		merged := target{files: []string{base.Index.top[0], file}, dir: t.dir, explicit: true, root: t.root}
		p := loadOne(ctx, merged, opts)
		if p.model != nil {
			resolve(p, opts.Need, opts.needFrom())
			p.resolveDirectives()
			p.scope(base)
			p.Variant = &analyze.Variant{File: p.Files[1], Base: p.Files[0], Of: base.model0(), Why: takesFrom(names, p.Files[0])}
			return p
		}
		why = "merged over " + base.firstFile() + " it does not load: " + p.Errors[0].Msg
	}
	p := loadOne(ctx, target{files: []string{file}, dir: t.dir, explicit: true, root: t.root}, opts)
	if p.model != nil {
		resolve(p, opts.Need, opts.needFrom())
		p.resolveDirectives()
	}
	shown := file
	if len(p.Files) > 0 {
		shown = p.Files[0]
	}
	p.Variant = &analyze.Variant{File: shown, Why: why, Of: base.model0()}
	return p
}

// takesFrom says which services of an overlay take their image or build from the base.
func takesFrom(names []string, base string) string {
	if len(names) == 1 {
		return fmt.Sprintf("service %s takes its image or build from %s", names[0], base)
	}
	return fmt.Sprintf("services %s take their image or build from %s", someOf(names, 3), base)
}

// scope keeps the plans of the services an overlay adds to or changes in its base: the
// others are the base project's, reported there once. Every plan is kept for lookups
// (ipc donors).
func (p *project) scope(base *project) {
	p.All = p.Plans
	var in []*analyze.ShmPlan
	for _, plan := range p.Plans {
		for _, l := range p.Index.layers(plan.Service) {
			if !base.Reads(l.file) {
				in = append(in, plan)
				break
			}
		}
	}
	p.Plans = in
}
