//go:build linux

package engine

import (
	"fmt"
	"os"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/enginetest"
)

// testAgent is a static linux binary holding the agent, built for the tests: a test binary
// is not the doctor.
var testAgent string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// Digest records and locks go to a folder of this process's own.
	s, err := enginetest.NewScratch("engine")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Remove()
	testAgent = s.Agent
	return m.Run()
}
