// Package largegen writes valid compose files of a chosen size in the shapes that stress a
// YAML loader: many small services, many anchors and merge keys, one huge mapping, and long
// lists of nested lists. The tests that hold the doctor to linear work and the benchmarks
// that time it against docker compose read the same files. The output is deterministic and
// is accepted by `docker compose config -q`.
package largegen

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

// Kinds names every shape Write can produce, in the order reports list them.
var Kinds = []string{"services", "merge", "mapping", "lists"}

// Write writes a compose file of the given kind, of at most size bytes and within a few
// hundred bytes of it. It returns the number of units written (services, keys or list items).
func Write(w io.Writer, kind string, size int) (int, error) {
	g, ok := kinds[kind]
	if !ok {
		return 0, fmt.Errorf("unknown kind %q (known: %v)", kind, Kinds)
	}
	cw := &counter{w: bufio.NewWriter(w)}
	fmt.Fprint(cw, g.head)
	n := 0
	for ; ; n++ {
		unit := g.unit(n)
		if cw.n+len(unit)+len(g.tail) > size {
			break
		}
		fmt.Fprint(cw, unit)
	}
	fmt.Fprint(cw, g.tail)
	if err := cw.w.Flush(); err != nil {
		return n, err
	}
	return n, cw.err
}

// WriteFile writes Write's output to path.
func WriteFile(path, kind string, size int) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := Write(f, kind, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

type counter struct {
	w   *bufio.Writer
	n   int
	err error
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	if c.err == nil {
		c.err = err
	}
	return n, err
}

type shape struct {
	head string
	unit func(i int) string
	tail string
}

// anchorEvery is how many services share one anchor in the merge shape.
const anchorEvery = 8

// envPerService is how many variables each service of the merge shape sets: enough that
// 8 MiB hold fewer services than the doctor accepts in one mapping.
const envPerService = 40

// depth is how deep the lists of the lists shape nest.
const depth = 12

var kinds = map[string]shape{
	// Many small services, each with its own little mappings.
	"services": {
		head: "name: large\nservices:\n",
		unit: func(i int) string {
			return fmt.Sprintf("  svc-%06d:\n    image: busybox:1.36\n    shm_size: %dm\n    environment:\n      N: \"%d\"\n", i, 64+i%64, i)
		},
	},
	// Many anchors and merge keys: every group of services has a base service with an
	// anchor, which the others of the group merge, and a command list they alias; each
	// service sets envPerService variables. Each
	// anchor has few uses: docker compose's loader compares every use of one anchor with
	// every other, so a file that used one anchor in every service would not be linear.
	"merge": {
		head: "name: large\nservices:\n",
		unit: func(i int) string {
			g := i / anchorEvery
			if i%anchorEvery == 0 {
				return fmt.Sprintf("  base-%06d: &b%d\n    image: busybox:1.36\n    shm_size: %dm\n    ipc: private\n    command: &c%d [sleep, \"%d\"]\n", i, g, 64+i%64, g, i)
			}
			s := fmt.Sprintf("  svc-%06d:\n    <<: [*b%d]\n    command: *c%d\n    environment:\n", i, g, g)
			for e := range envPerService {
				s += fmt.Sprintf("      VAR_%02d: \"%d-%d\"\n", e, i, e)
			}
			return s
		},
	},
	// One service with one huge mapping of labels.
	"mapping": {
		head: "name: large\nservices:\n  big:\n    image: busybox:1.36\n    shm_size: 256m\n    labels:\n",
		unit: func(i int) string {
			return fmt.Sprintf("      io.large.key-%07d: value-%d\n", i, i)
		},
	},
	// One service, and a long extension list whose items are lists nested depth deep.
	"lists": {
		head: "name: large\nservices:\n  deep:\n    image: busybox:1.36\n    shm_size: 128m\nx-lists:\n",
		unit: func(i int) string {
			s := "  "
			for d := 0; d < depth; d++ {
				s += "- "
			}
			return s + fmt.Sprintf("item-%07d\n", i)
		},
	},
}
