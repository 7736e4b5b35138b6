package procs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Process is a running process: its id and arguments.
type Process struct {
	PID  int
	Args []string
}

// List is every running process whose command line can be read (not
// zombies, which have none).
func List() []Process {
	var out []Process
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		out = append(out, Process{PID: pid, Args: strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")})
	}
	return out
}

// CommandLines are the arguments of every process List finds.
func CommandLines() [][]string {
	var out [][]string
	for _, p := range List() {
		out = append(out, p.Args)
	}
	return out
}
