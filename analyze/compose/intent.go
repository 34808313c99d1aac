package compose

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/suppress"
	"go.yaml.in/yaml/v3"
)

// intent reads x-shmdoctor: need, dataloader (need = (workers × prefetch_factor + 2½) ×
// batch_bytes, one batch less with persistent_workers or workers started by forkserver or
// spawn: see dataloaderNeed) and ignore. Mistakes in it are located errors: a silent typo would hide a real finding.
func (p *project) intent(plan *analyze.ShmPlan, s *types.ServiceConfig) {
	raw, ok := s.Extensions[analyze.IntentKey]
	if !ok || raw == nil {
		return
	}
	x, ok := raw.(map[string]any)
	at := func(key ...string) analyze.Pos { return p.keyPos(plan, append([]string{analyze.IntentKey}, key...)...) }
	if !ok {
		p.Fail(at(), "%s must be a mapping with need, dataloader or ignore", analyze.IntentKey)
		return
	}
	for k, v := range x {
		switch k {
		case "need":
			n, err := sizeValue(v)
			if err != nil {
				p.Fail(at("need"), "%s.need: %v", analyze.IntentKey, err)
				continue
			}
			plan.Need, plan.NeedFrom = analyze.Ptr(n), analyze.IntentKey+".need"
		case "dataloader":
			if plan.Need != nil && plan.NeedFrom == analyze.IntentKey+".need" {
				continue
			}
			n, err := dataloaderNeed(v)
			if err != nil {
				p.Fail(at("dataloader"), "%s.dataloader: %v", analyze.IntentKey, err)
				continue
			}
			plan.Need, plan.NeedFrom = analyze.Ptr(n), analyze.IntentKey+".dataloader"
		case "ignore":
			if err := p.ignoreIntent(plan, v, at("ignore")); err != nil {
				p.Fail(at("ignore"), "%s.ignore: %v", analyze.IntentKey, err)
			}
		default:
			p.Fail(at(k), "%s.%s is not a known key: use need, dataloader or ignore", analyze.IntentKey, k)
		}
	}
}

const dataloaderKeys = "workers, prefetch_factor, batch_bytes, persistent_workers and start_method"

// dataloaderNeed is the /dev/shm a PyTorch DataLoader holds at its peak, in batches:
//
//   - workers × prefetch_factor batches in flight, made by the workers in shared memory;
//   - one more, the batch the training loop holds while the next one arrives;
//   - half of one, for a batch a worker writes while the loop still holds the one before (the
//     lab caught up to a fifth of one; half keeps a margin on a loaded machine);
//   - without persistent_workers, and with workers started by fork (Linux's default before
//     Python 3.14), one more: the next epoch's new workers are forked while the loop holds
//     the last batch of an epoch, inherit its mapping (their /proc/PID/maps show its deleted
//     /dev/shm/torch_* file) and keep it in /dev/shm until they end. Workers started by
//     forkserver or spawn are not forked from the loop and map none of its batches.
//
// pin_memory leaves it alone on a machine without CUDA (PyTorch turns it off); with CUDA the
// loop's batch is a pinned copy outside /dev/shm, and the estimate is a batch high.
// Measured by the truth lab (make lab, docs/lab.md) with Debian's PyTorch 1.13 over two
// epochs: 4 workers × prefetch 2 × 24 MiB peaked at 243.3 MiB (10.1 batches) without
// persistent workers and 220.3 MiB (9.2) with them; the formula gives 252 and 228 MiB. With
// workers started by forkserver and no persistent workers it peaked at 216.1 MiB (9.0), where
// the formula gives 228 MiB.
func dataloaderNeed(v any) (int64, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return 0, fmt.Errorf("must be a mapping with %s", dataloaderKeys)
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
	persistent := false
	if v, ok := m["persistent_workers"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return 0, fmt.Errorf("persistent_workers must be true or false")
		}
		persistent = b
	}
	forked := true
	if v, ok := m["start_method"]; ok && v != nil {
		switch v {
		case "fork":
		case "forkserver", "spawn":
			forked = false
		default:
			return 0, fmt.Errorf("start_method must be fork, forkserver or spawn")
		}
	}
	for k := range m {
		switch k {
		case "workers", "prefetch_factor", "batch_bytes", "persistent_workers", "start_method":
		default:
			return 0, fmt.Errorf("%s is not a known key: use %s", k, dataloaderKeys)
		}
	}
	need := (workers*factor+1)*batch + batch/2
	if !persistent && forked {
		need += batch
	}
	return need, nil
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
		return analyze.ParseSize(x)
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
// of them separated by commas. Each entry is a Suppressor of the service, located at its
// list item where the index finds one.
func (p *project) ignoreIntent(plan *analyze.ShmPlan, v any, at analyze.Pos) error {
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
	if n, _, ok := p.Index.Lookup(plan.Service, analyze.IntentKey, "ignore"); ok {
		switch {
		case n.Kind == yaml.SequenceNode && len(n.Content) == len(items):
			nodes = n.Content
		case n.Kind == yaml.ScalarNode && len(items) == 1:
			nodes = []*yaml.Node{n}
		}
	}
	var sups []*analyze.Suppressor
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			return fmt.Errorf("%v is not a rule ID (see shmdoctor rules)", it)
		}
		ids, reason, err := suppress.ParseIgnore(s)
		if err != nil {
			return err
		}
		pos := at
		if nodes != nil {
			pos.Line, pos.Column = nodes[i].Line, nodes[i].Column
		}
		plan.Ignore = append(plan.Ignore, ids...)
		sups = append(sups, &analyze.Suppressor{
			Suppression: analyze.Suppression{Kind: analyze.SuppressExtension, Reason: reason, Pos: pos},
			Rules:       ids, Services: []string{plan.Service}, Analysed: true,
		})
	}
	p.Suppressors = append(p.Suppressors, sups...)
	return nil
}
