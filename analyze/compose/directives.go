package compose

import (
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// directiveErrors turns malformed directives into located errors: a typo in a
// suppression would otherwise silence nothing, or the wrong rule.
func (p *project) directiveErrors() {
	ix := p.Index
	for _, file := range ix.Sorted() {
		for _, d := range ix.directives[file] {
			if d.Err != nil {
				p.fail(analyze.Pos{File: ix.Display(file), Line: d.Line, Column: d.Col}, "%s: %v", analyze.IgnoreDirective, d.Err)
			}
		}
	}
}

// resolveDirectives turns the comments of every file into Suppressors, once the plans are
// known: a comment on or above a service key (or a Kubernetes container's name) covers the
// whole service, one on or above any other line covers the findings on that line.
func (p *project) resolveDirectives() {
	ix := p.Index
	for _, file := range ix.Sorted() {
		for _, d := range ix.directives[file] {
			if d.Err != nil {
				continue
			}
			s := &analyze.Suppressor{
				Suppression: analyze.Suppression{Kind: analyze.SuppressComment, Reason: d.Reason, Pos: analyze.Pos{File: ix.Display(file), Line: d.Line, Column: d.Col}},
				Rules:       d.Ids, OnFile: ix.Display(file), OnLine: d.Target, Analysed: true,
			}
			p.composeScope(s, file, d.Target)
			p.Suppressors = append(p.Suppressors, s)
		}
	}
}

// composeScope decides what a comment covers in a compose file: the services whose
// definition (in any layer: override, extends, include) has its key on the line, else the
// line, owned by the service whose block holds it.
func (p *project) composeScope(s *analyze.Suppressor, file string, line int) {
	key := p.Index.serviceKeyAround(file, line)
	for _, plan := range p.Plans {
		for _, l := range p.Index.layers(plan.Service) {
			if l.file != file || l.key == nil || l.key != key {
				continue
			}
			if key.Line == line {
				s.Services = append(s.Services, plan.Service)
			} else if s.Owner == "" {
				s.Owner = plan.Service
			}
		}
	}
	// A line inside a service no plan owns (left out by --profile) cannot be judged.
	s.Analysed = key == nil || s.Services != nil || s.Owner != ""
}

// serviceKeyAround is the key of the service whose block in file holds line, nil when the
// line is outside every service.
func (ix *Index) serviceKeyAround(file string, line int) *yaml.Node {
	docs := ix.Docs[file]
	for d, doc := range docs {
		end := int(^uint(0) >> 1)
		if d+1 < len(docs) {
			end = docs[d+1].Line
		}
		doc = source.Deref(doc)
		if doc == nil || doc.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value != "services" {
				continue
			}
			blockEnd := end
			if i+2 < len(doc.Content) {
				blockEnd = doc.Content[i+2].Line
			}
			svcs := source.Deref(doc.Content[i+1])
			if svcs == nil || svcs.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(svcs.Content); j += 2 {
				next := blockEnd
				if j+2 < len(svcs.Content) {
					next = svcs.Content[j+2].Line
				}
				if k := svcs.Content[j]; k.Line <= line && line < next {
					return k
				}
			}
		}
	}
	return nil
}
