package source

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"go.yaml.in/yaml/v3"
)

// KeysScanned counts the mapping keys the doctor's own lookups read. The tests hold it to
// grow linearly with the input, which a lookup that reads a large mapping once per item of
// it (every service of a 100,000-service file finding itself in services:) does not.
var KeysScanned atomic.Int64

// indexedKeys is the size from which a mapping's keys are found through a map rather than
// read in turn; below it reading them is cheaper than the map.
const indexedKeys = 32

// keyIndex is what a lookup needs of a large mapping: where each of its own keys is in its
// Content, and the values of its merge keys, in order.
type keyIndex struct {
	pos    map[string]int
	merges []*yaml.Node
}

// keyIndexes holds the index of every large mapping looked up. The nodes are held weakly:
// an entry goes with its node. The YAML trees the doctor parses are never modified once
// parsed, so an entry never goes stale.
var keyIndexes = struct {
	sync.Mutex
	m map[weak.Pointer[yaml.Node]]*keyIndex
}{m: map[weak.Pointer[yaml.Node]]*keyIndex{}}

// mappingKeys returns m's own key name (its position in m.Content, -1 if none) and the
// values of m's merge keys; m is a mapping. A small mapping is read in turn, a large one
// is indexed on its first lookup, so that looking up each of its keys once stays linear.
func mappingKeys(m *yaml.Node, name string) (int, []*yaml.Node) {
	if len(m.Content) < 2*indexedKeys {
		KeysScanned.Add(int64(len(m.Content) / 2))
		at := -1
		var merges []*yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			k := m.Content[i]
			if k.Value == name && k.Tag != "!!merge" {
				at = i
				break
			}
			if isMerge(k) {
				merges = append(merges, m.Content[i+1])
			}
		}
		if at >= 0 {
			return at, nil
		}
		return -1, merges
	}
	KeysScanned.Add(1)
	ki := indexOf(m)
	if i, ok := ki.pos[name]; ok {
		return i, nil
	}
	return -1, ki.merges
}

func indexOf(m *yaml.Node) *keyIndex {
	w := weak.Make(m)
	keyIndexes.Lock()
	defer keyIndexes.Unlock()
	if ki, ok := keyIndexes.m[w]; ok {
		return ki
	}
	KeysScanned.Add(int64(len(m.Content) / 2))
	ki := &keyIndex{pos: make(map[string]int, len(m.Content)/2)}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if isMerge(k) {
			ki.merges = append(ki.merges, m.Content[i+1])
		}
		if k.Tag == "!!merge" {
			continue
		}
		if _, dup := ki.pos[k.Value]; !dup {
			ki.pos[k.Value] = i
		}
	}
	keyIndexes.m[w] = ki
	runtime.AddCleanup(m, func(w weak.Pointer[yaml.Node]) {
		keyIndexes.Lock()
		delete(keyIndexes.m, w)
		keyIndexes.Unlock()
	}, w)
	return ki
}

// isMerge reports a merge key (<<).
func isMerge(k *yaml.Node) bool {
	return k.Tag == "!!merge" || (k.Value == "<<" && k.Style == 0)
}
