// Command genlarge writes the large compose files the linear-time tests and benchmarks use,
// so that the doctor and docker compose can be timed on the same files.
//
// Usage:
//
//	go run ./scripts/genlarge -o DIR [-mib 1,2,4,8] [-kinds services,merge,mapping,lists]
//
// DIR receives KIND-NMiB.yaml for every kind and size.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shmdoctor/shmdoctor/internal/largegen"
)

func main() {
	out := flag.String("o", "", "output folder (created if missing)")
	mib := flag.String("mib", "1,2,4,8", "sizes in MiB, comma-separated")
	kinds := flag.String("kinds", strings.Join(largegen.Kinds, ","), "kinds of file, comma-separated")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: genlarge -o DIR [-mib 1,2,4,8] [-kinds services,merge,mapping,lists]")
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "genlarge: %v\n", err)
		os.Exit(1)
	}
	for _, k := range strings.Split(*kinds, ",") {
		for _, m := range strings.Split(*mib, ",") {
			n, err := strconv.Atoi(m)
			if err != nil || n <= 0 {
				fmt.Fprintf(os.Stderr, "genlarge: size %q is not a positive number of MiB\n", m)
				os.Exit(2)
			}
			path := filepath.Join(*out, fmt.Sprintf("%s-%dMiB.yaml", k, n))
			if _, err := largegen.WriteFile(path, k, n<<20); err != nil {
				fmt.Fprintf(os.Stderr, "genlarge: %v\n", err)
				os.Exit(1)
			}
			fmt.Println(path)
		}
	}
}
