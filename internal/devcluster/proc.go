package devcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is what /proc tells of one process.
type proc struct {
	ppid   int
	start  uint64 // clock ticks after boot: with the pid, the process's identity
	zombie bool
	netns  nsID
}

// nsID identifies a namespace (the nsfs file's device and inode).
type nsID struct{ dev, ino uint64 }

func nsOf(path string) (nsID, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nsID{}, false
	}
	return nsID{uint64(st.Dev), st.Ino}, true
}

// parseStat reads the parent, state and start time out of /proc/PID/stat.
func parseStat(stat string) (ppid int, zombie bool, start uint64, err error) {
	// The command (field 2) is in parentheses and may hold anything.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false, 0, fmt.Errorf("bad stat %q", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return 0, false, 0, fmt.Errorf("bad stat %q", stat)
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return 0, false, 0, err
	}
	if start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return 0, false, 0, err
	}
	return ppid, f[0] == "Z" || f[0] == "X", start, nil
}

func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return proc{}, false
	}
	ppid, zombie, start, err := parseStat(string(b))
	if err != nil {
		return proc{}, false
	}
	ns, _ := nsOf(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"))
	return proc{ppid: ppid, start: start, zombie: zombie, netns: ns}, true
}

// readProcs is every live process.
func readProcs() map[int]proc {
	entries, _ := os.ReadDir("/proc")
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok && !p.zombie {
			procs[pid] = p
		}
	}
	return procs
}

// startTime is the start time of a live process (0: none).
func startTime(pid int) uint64 {
	if p, ok := readProc(pid); ok && !p.zombie {
		return p.start
	}
	return 0
}

// selectProcs is the pids of procs that are a recorded process (pid with
// its start time), in one of the namespaces, or a descendant of one of
// those; never init, this process or one of its ancestors (which may have
// started the hosts).
func selectProcs(procs map[int]proc, recorded map[int]uint64, namespaces []nsID) []int {
	in := map[nsID]bool{}
	for _, n := range namespaces {
		in[n] = true
	}
	chosen := map[int]bool{}
	for pid, p := range procs {
		if start, ok := recorded[pid]; (ok && start == p.start) || in[p.netns] {
			chosen[pid] = true
		}
	}
	for grew := true; grew; { // descendants: containers, whose shims left the namespace's pids
		grew = false
		for pid, p := range procs {
			if !chosen[pid] && chosen[p.ppid] {
				chosen[pid], grew = true, true
			}
		}
	}
	for pid := os.Getpid(); pid > 0; {
		delete(chosen, pid)
		p, ok := procs[pid]
		if !ok || p.ppid == pid {
			break
		}
		pid = p.ppid
	}
	delete(chosen, 1)
	var pids []int
	for pid := range chosen {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	return pids
}

// stopProcs sends SIGTERM to the processes that gentle picks (SIGKILL at
// once to the others), then SIGKILL to those still alive after grace, and
// waits (bounded) for all to be gone.
func stopProcs(pids []int, gentle func(pid int) bool, grace time.Duration) error {
	ids := map[int]uint64{}
	for _, pid := range pids {
		if s := startTime(pid); s != 0 {
			ids[pid] = s
		}
	}
	alive := func() []int {
		var left []int
		for pid, s := range ids {
			if startTime(pid) == s {
				left = append(left, pid)
			}
		}
		sort.Ints(left)
		return left
	}
	signal := func(sig syscall.Signal) {
		for _, pid := range alive() {
			if sig == syscall.SIGTERM && !gentle(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			} else {
				syscall.Kill(pid, sig)
			}
		}
	}
	wait := func(limit time.Duration) bool {
		deadline := time.Now().Add(limit)
		for len(alive()) > 0 {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(50 * time.Millisecond)
		}
		return true
	}
	if grace > 0 {
		signal(syscall.SIGTERM)
		if wait(grace) {
			return nil
		}
	}
	signal(syscall.SIGKILL)
	if !wait(10 * time.Second) {
		return fmt.Errorf("processes %v still alive 10s after SIGKILL", alive())
	}
	return nil
}
