package procs

import (
	"os"
	"path/filepath"
	"strings"
)

// CommandLines are the arguments of every running process whose command
// line can be read (not those of zombies, which have none).
func CommandLines() [][]string {
	var out [][]string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		out = append(out, strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"))
	}
	return out
}
