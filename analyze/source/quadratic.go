package source

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The loader docker compose uses (compose-go over yaml.v3) takes time quadratic in three
// things a valid file can hold, and the doctor hands it every file: it compares every key
// of a mapping with every other (yaml.v3's duplicate check), every use of an anchor with
// every earlier use of it (compose-go's cycle check), and every value of the file with
// every !reset or !override tag. quadratic measures the three in linear time on the
// doctor's own tree, aliases expanded, and refuses a file past any bound at the construct
// that costs most, rather than load it for minutes. The bounds let through a mapping of
// 10,000 keys, an anchor used 4,000 times, and a file of 100,000 values with 40 reset
// tags: real stacks stay far below. The keys of all mappings together may cost twice what
// the largest mapping allowed does.
const (
	maxMappingKeys = 10_000
	maxKeyPairs    = maxMappingKeys * maxMappingKeys // twice what the largest mapping costs
	maxAnchorPairs = 4_000 * 4_000
	maxResetWork   = 100_000 * 40
)

// Quadratic returns the node to report and a message when loading root would cost more
// than a bound allows; nil when it is within them. root has passed expandedSize, so its
// aliases expand to a bounded number of nodes.
func Quadratic(root *yaml.Node) (*yaml.Node, string) {
	type cost struct {
		pairs   int64      // pairs of keys in its mappings, aliases expanded
		resets  int64      // !reset and !override tags, aliases expanded
		nodes   int64      // nodes, aliases expanded
		biggest *yaml.Node // its mapping with the most keys
	}
	memo := map[*yaml.Node]*cost{}
	parent := map[*yaml.Node]*yaml.Node{}
	aliasesTo := map[*yaml.Node][]*yaml.Node{}
	var walk func(n *yaml.Node) *cost
	walk = func(n *yaml.Node) *cost {
		if c, ok := memo[n]; ok {
			return c
		}
		c := &cost{nodes: 1}
		memo[n] = c
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			aliasesTo[n.Alias] = append(aliasesTo[n.Alias], n)
			t := walk(n.Alias)
			c.pairs, c.resets, c.nodes, c.biggest = t.pairs, t.resets, t.nodes, t.biggest
			return c
		}
		if n.Tag == "!reset" || n.Tag == "!override" {
			c.resets = 1
		}
		if n.Kind == yaml.MappingNode {
			k := int64(len(n.Content) / 2)
			c.pairs, c.biggest = k*(k-1)/2, n
		}
		for _, ch := range n.Content {
			parent[ch] = n
			cc := walk(ch)
			c.pairs = min(c.pairs+cc.pairs, 1<<62)
			c.resets = min(c.resets+cc.resets, 1<<40)
			c.nodes = min(c.nodes+cc.nodes, 1<<40)
			if cc.biggest != nil && (c.biggest == nil || len(cc.biggest.Content) > len(c.biggest.Content)) {
				c.biggest = cc.biggest
			}
		}
		return c
	}
	total := walk(root)
	if total.biggest == nil {
		return nil, ""
	}
	if k := len(total.biggest.Content) / 2; k > maxMappingKeys {
		return total.biggest, fmt.Sprintf("%d keys in one mapping: refusing the file, docker compose's YAML decoder compares every key of a mapping with every other (at most %d keys in one mapping)", k, maxMappingKeys)
	}
	if total.pairs > maxKeyPairs {
		return total.biggest, fmt.Sprintf("mappings whose keys need %d comparisons to load, %d keys in the largest: refusing the file, docker compose's YAML decoder compares every key of a mapping with every other (at most %d comparisons in a file)", total.pairs, len(total.biggest.Content)/2, int64(maxKeyPairs))
	}
	if total.resets > 0 && total.resets*total.nodes > maxResetWork {
		at := firstReset(root)
		if at == nil {
			at = root
		}
		return at, fmt.Sprintf("%d !reset or !override tags in a file of %d values: refusing the file, docker compose checks every value against every such tag (at most %d tags in a file of %d values)", total.resets, total.nodes, maxResetWork/100_000, 100_000)
	}
	// Every use of an anchor is visited as often as the alias is, which is as often as
	// its parent is, plus the uses of any anchor it lies in: counted from the root down,
	// memoised, in linear time.
	visits := map[*yaml.Node]int64{root: 1}
	var count func(n *yaml.Node) int64
	count = func(n *yaml.Node) int64 {
		if v, ok := visits[n]; ok {
			return v
		}
		visits[n] = 0 // a cycle, which yaml.v3 refuses anyway, counts nothing
		v := int64(0)
		if p := parent[n]; p != nil {
			v = count(p)
		}
		for _, a := range aliasesTo[n] {
			v = min(v+count(a), 1<<30)
		}
		visits[n] = v
		return v
	}
	var pairs, most int64
	var worst *yaml.Node
	for target, aliases := range aliasesTo {
		uses := int64(0)
		for _, a := range aliases {
			uses = min(uses+count(a), 1<<30)
		}
		pairs = min(pairs+uses*uses, 1<<62)
		if uses > most || uses == most && worst != nil && before(target, worst) {
			most, worst = uses, target
		}
	}
	if pairs > maxAnchorPairs {
		return worst, fmt.Sprintf("anchor &%s is used %d times: refusing the file, docker compose's loader compares every use of an anchor with every other (at most %d uses of one anchor, or as many comparisons across anchors)", worst.Anchor, most, isqrt(maxAnchorPairs))
	}
	return nil, ""
}

func before(a, b *yaml.Node) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
}

// firstReset is the first node tagged !reset or !override in n, in document order.
func firstReset(n *yaml.Node) *yaml.Node {
	if n.Tag == "!reset" || n.Tag == "!override" {
		return n
	}
	for _, c := range n.Content {
		if r := firstReset(c); r != nil {
			return r
		}
	}
	return nil
}

func isqrt(n int64) int64 {
	r := int64(1)
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}
