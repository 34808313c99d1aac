package compose

import (
	"sort"

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
			if e := d.Problem(ix.Display(file)); e != nil {
				p.Errors = append(p.Errors, e)
			}
		}
	}
}

// resolveDirectives turns the comments of every file into Suppressors, once the plans are
// known: a comment on or above a service key (or a Kubernetes container's name) covers the
// whole service, one on or above any other line covers the findings on that line.
func (p *project) resolveDirectives() {
	ix := p.Index
	var owners map[*yaml.Node][]string
	for _, file := range ix.Sorted() {
		for _, d := range ix.directives[file] {
			if d.Err != nil {
				continue
			}
			s := d.Suppressor(ix.Display(file))
			if owners == nil {
				owners = p.keyOwners()
			}
			p.composeScope(s, file, d.Target, owners)
			p.Suppressors = append(p.Suppressors, s)
		}
	}
}

// composeScope decides what a comment covers in a compose file: the services whose
// definition (in any layer: override, extends, include) has its key on the line, else the
// line, owned by the service whose block holds it.
func (p *project) composeScope(s *analyze.Suppressor, file string, line int, owners map[*yaml.Node][]string) {
	key := p.Index.serviceKeyAround(file, line)
	for _, svc := range owners[key] {
		if key.Line == line {
			s.Services = append(s.Services, svc)
		} else if s.Owner == "" {
			s.Owner = svc
		}
	}
	// A line inside a service no plan owns (left out by --profile) cannot be judged.
	s.Analysed = key == nil || s.Services != nil || s.Owner != ""
}

// keyOwners maps the key of each service definition (a layer) to the services planned from
// it, in the order of the plans, once for each layer written under it.
func (p *project) keyOwners() map[*yaml.Node][]string {
	out := map[*yaml.Node][]string{}
	for _, plan := range p.Plans {
		ls := p.Index.layers(plan.Service)
		analyze.SuppressionWork.Add(int64(len(ls)))
		for _, l := range ls {
			if l.key != nil {
				out[l.key] = append(out[l.key], plan.Service)
			}
		}
	}
	return out
}

// serviceBlock is the key of a service in a file and the lines its block spans, from its
// key to the next key.
type serviceBlock struct {
	key      *yaml.Node
	from, to int
}

// serviceBlocks are the service blocks of a file in the order serviceKeyAround reads them;
// ordered when each ends before the next starts, as they do unless the services mapping is
// an alias.
type serviceBlocks struct {
	list    []serviceBlock
	ordered bool
}

// serviceKeyAround is the key of the service whose block in file holds line, nil when the
// line is outside every service.
func (ix *Index) serviceKeyAround(file string, line int) *yaml.Node {
	b := ix.serviceBlocks(file)
	analyze.SuppressionWork.Add(1)
	if b.ordered {
		i := sort.Search(len(b.list), func(i int) bool { return b.list[i].to > line })
		if i < len(b.list) && b.list[i].from <= line {
			return b.list[i].key
		}
		return nil
	}
	for _, e := range b.list {
		analyze.SuppressionWork.Add(1)
		if e.from <= line && line < e.to {
			return e.key
		}
	}
	return nil
}

// serviceBlocks lists the service blocks of a file, once a file.
func (ix *Index) serviceBlocks(file string) *serviceBlocks {
	if b, ok := ix.blocks[file]; ok {
		return b
	}
	b := &serviceBlocks{ordered: true}
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
				e := serviceBlock{key: svcs.Content[j], from: svcs.Content[j].Line, to: next}
				if n := len(b.list); e.from > e.to || n > 0 && b.list[n-1].to > e.from {
					b.ordered = false
				}
				b.list = append(b.list, e)
			}
		}
	}
	if ix.blocks == nil {
		ix.blocks = map[string]*serviceBlocks{}
	}
	ix.blocks[file] = b
	return b
}
