package procs

import (
	"os"
	"slices"
	"testing"
)

// TestCommandLines finds this test's own process by its arguments.
func TestCommandLines(t *testing.T) {
	for _, args := range CommandLines() {
		if slices.Equal(args, os.Args) {
			return
		}
	}
	t.Fatalf("no process has this test's command line %q", os.Args)
}
