package analyze

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// IntentKey is the service extension where a service declares what it needs.
const IntentKey = "x-shmdoctor"

// intent reads x-shmdoctor: need, dataloader (need = (workers × prefetch_factor + 1) ×
// batch_bytes: see dataloaderNeed) and ignore. Mistakes in it are located errors: a silent typo would hide a real finding.
func (p *Project) intent(plan *ShmPlan, s *types.ServiceConfig) {
	raw, ok := s.Extensions[IntentKey]
	if !ok || raw == nil {
		return
	}
	x, ok := raw.(map[string]any)
	at := func(key ...string) Pos { return p.keyPos(plan, append([]string{IntentKey}, key...)...) }
	if !ok {
		p.fail(at(), "%s must be a mapping with need, dataloader or ignore", IntentKey)
		return
	}
	for k, v := range x {
		switch k {
		case "need":
			n, err := sizeValue(v)
			if err != nil {
				p.fail(at("need"), "%s.need: %v", IntentKey, err)
				continue
			}
			plan.Need, plan.NeedFrom = ptr(n), IntentKey+".need"
		case "dataloader":
			if plan.Need != nil && plan.NeedFrom == IntentKey+".need" {
				continue
			}
			n, err := dataloaderNeed(v)
			if err != nil {
				p.fail(at("dataloader"), "%s.dataloader: %v", IntentKey, err)
				continue
			}
			plan.Need, plan.NeedFrom = ptr(n), IntentKey+".dataloader"
		case "ignore":
			if err := p.ignoreIntent(plan, v, at("ignore")); err != nil {
				p.fail(at("ignore"), "%s.ignore: %v", IntentKey, err)
			}
		default:
			p.fail(at(k), "%s.%s is not a known key: use need, dataloader or ignore", IntentKey, k)
		}
	}
}

// dataloaderNeed is the /dev/shm a PyTorch DataLoader holds at its peak: every worker keeps
// prefetch_factor batches in flight, and the batch the training loop holds is still in shared
// memory. Measured with Debian's PyTorch 1.13 (4 workers, prefetch 2, 24 MiB batches): a peak
// of 216 MiB, nine batches; shm_size 200m died with a Bus error, 230m passed.
func dataloaderNeed(v any) (int64, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return 0, fmt.Errorf("must be a mapping with workers, prefetch_factor and batch_bytes")
	}
	workers, err := intValue(m["workers"], "workers", -1)
	if err != nil {
		return 0, err
	}
	factor, err := intValue(m["prefetch_factor"], "prefetch_factor", 2)
	if err != nil {
		return 0, err
	}
	if m["batch_bytes"] == nil {
		return 0, fmt.Errorf("batch_bytes is required (the size of one batch, such as 128MiB)")
	}
	batch, err := sizeValue(m["batch_bytes"])
	if err != nil {
		return 0, fmt.Errorf("batch_bytes: %v", err)
	}
	for k := range m {
		switch k {
		case "workers", "prefetch_factor", "batch_bytes":
		default:
			return 0, fmt.Errorf("%s is not a known key: use workers, prefetch_factor and batch_bytes", k)
		}
	}
	return (workers*factor + 1) * batch, nil
}

func intValue(v any, name string, def int64) (int64, error) {
	if v == nil {
		if def < 0 {
			return 0, fmt.Errorf("%s is required", name)
		}
		return def, nil
	}
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case uint64:
		n = int64(x)
	case float64:
		n = int64(x)
		if float64(n) != x {
			return 0, fmt.Errorf("%s must be a whole number, not %v", name, x)
		}
	case string:
		var err error
		if n, err = strconv.ParseInt(strings.TrimSpace(x), 10, 64); err != nil {
			return 0, fmt.Errorf("%s must be a whole number, not %q", name, x)
		}
	default:
		return 0, fmt.Errorf("%s must be a whole number", name)
	}
	if n < 0 || n > 1<<20 {
		return 0, fmt.Errorf("%s %d is out of range", name, n)
	}
	return n, nil
}

func sizeValue(v any) (int64, error) {
	switch x := v.(type) {
	case string:
		return ParseSize(x)
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		return int64(x), nil
	case float64:
		return int64(x), nil
	}
	return 0, fmt.Errorf("must be a size such as 4g or 512m")
}

// ignoreIntent reads x-shmdoctor.ignore: a list of "SHM020 reason" entries, or one string
// of them separated by commas. Each entry is a suppressor of the service, located at its
// list item where the index finds one.
func (p *Project) ignoreIntent(plan *ShmPlan, v any, at Pos) error {
	var items []any
	switch x := v.(type) {
	case []any:
		items = x
	case string:
		items = []any{x}
	default:
		return fmt.Errorf("must be a list of rule IDs such as [SHM020]")
	}
	var nodes []*yaml.Node
	if n, _, ok := p.Index.Lookup(plan.Service, IntentKey, "ignore"); ok {
		switch {
		case n.Kind == yaml.SequenceNode && len(n.Content) == len(items):
			nodes = n.Content
		case n.Kind == yaml.ScalarNode && len(items) == 1:
			nodes = []*yaml.Node{n}
		}
	}
	var sups []*suppressor
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			return fmt.Errorf("%v is not a rule ID (see shmdoctor rules)", it)
		}
		ids, reason, err := parseIgnore(s)
		if err != nil {
			return err
		}
		pos := at
		if nodes != nil {
			pos.Line, pos.Column = nodes[i].Line, nodes[i].Column
		}
		plan.Ignore = append(plan.Ignore, ids...)
		sups = append(sups, &suppressor{
			Suppression: Suppression{Kind: SuppressExtension, Reason: reason, Pos: pos},
			rules:       ids, services: []string{plan.Service}, analysed: true,
		})
	}
	p.suppressors = append(p.suppressors, sups...)
	return nil
}
