package devcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/knftables"

	"plainkube.dev/plainkube/internal/mounts"
)

// hostDirName matches the hosts' data directories in a cluster's directory.
var hostDirName = regexp.MustCompile(`^(s0|a[0-9]+)$`)

// stopGrace is how long processes have between SIGTERM and SIGKILL.
const stopGrace = 3 * time.Second

// Down removes the cluster of c's directory; see the package Down.
func (c *Cluster) Down() error {
	err := Down(c.Dir)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, done := range c.exited { // the processes Up started are reaped
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}
	return err
}

// Down removes everything a cluster in dir made on this machine, whether
// Up finished, failed, or the processes crashed: it stops every process
// of the hosts (the recorded ones, those in the hosts' namespaces and in
// their pods' namespaces, and their descendants: SIGTERM, then SIGKILL),
// runs 'plainkube cleanup' in each namespace, unmounts what the nodes
// mounted under dir, removes the pods' and hosts' namespaces, the veths,
// the bridge and the nftables table, and the hosts' data. The hosts' logs
// stay. What to remove comes from dir's state file and, should that be
// missing, from the names derived from dir. Down of a directory with
// nothing left is no error.
func Down(dir string) error {
	l, err := discover(dir)
	if err != nil {
		return err
	}
	var errs []error
	record := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	record(l.stopAll(stopGrace))
	for _, h := range l.Hosts {
		if _, err := os.Stat(netnsPath(h.Netns)); err == nil {
			record(l.cleanupNode(h))
		}
	}
	record(unmountUnder(l.Dir))
	for _, h := range l.Hosts {
		removeRuntimeLeftovers(filepath.Join(h.DataDir, "node", "containerd"))
	}
	for _, h := range l.Hosts {
		if pods, err := podNetnsOrNone(h.Netns); err == nil {
			for _, p := range pods {
				record(removeNetns(p))
			}
		}
		record(deleteLink(h.Veth))
		record(removeNetns(h.Netns))
	}
	record(deleteLink(l.Bridge))
	record(removeTable(l.Table))
	if len(errs) == 0 {
		record(removeData(l))
	}
	return errors.Join(errs...)
}

// discover is the layout of dir's cluster: its state file's, with every
// namespace and host directory named after dir that it does not list
// (a run that crashed before writing them), or those alone.
func discover(dir string) (*Layout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	id, err := ClusterID(abs)
	if err != nil {
		return nil, err
	}
	l, err := ReadState(abs)
	if errors.Is(err, ErrNoCluster) {
		l = &Layout{Dir: abs, ID: id, Bridge: prefix(id), Table: prefix(id)}
	} else if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, h := range l.Hosts {
		known[h.Name] = true
	}
	add := func(name string) {
		if !known[name] {
			known[name] = true
			n := prefix(id) + "-" + name
			l.Hosts = append(l.Hosts, Host{Name: name, Netns: n, Veth: n, DataDir: filepath.Join(abs, name), Log: filepath.Join(abs, name+".log")})
		}
	}
	for _, n := range namedNetns(func(n string) bool { return ownsName(id, n) && n != prefix(id) }) {
		add(strings.TrimPrefix(n, prefix(id)+"-"))
	}
	if entries, err := os.ReadDir(abs); err == nil {
		for _, e := range entries {
			if e.IsDir() && hostDirName.MatchString(e.Name()) {
				add(e.Name())
			}
		}
	}
	if l.Binary == "" {
		l.Binary, _ = exec.LookPath("plainkube")
	}
	return l, nil
}

// podNetnsOrNone is podNetns of a namespace that may be gone.
func podNetnsOrNone(netns string) ([]string, error) {
	if _, err := os.Stat(netnsPath(netns)); err != nil {
		return nil, nil
	}
	return podNetns(netns)
}

// hostProcs lists the processes of the given hosts: the recorded ones, those
// in the hosts' namespaces or their pods', and their descendants. gentle
// picks the hosts' own processes (plainkube, containerd, the shims), which
// are asked to stop before they are killed; the pods' are killed at once.
func (l *Layout) hostProcs(hosts []Host) (pids []int, gentle func(int) bool) {
	recorded := map[int]uint64{}
	var namespaces []nsID
	own := map[nsID]bool{}
	for _, h := range hosts {
		if h.PID != 0 {
			recorded[h.PID] = h.Start
		}
		if ns, ok := nsOf(netnsPath(h.Netns)); ok {
			namespaces = append(namespaces, ns)
			own[ns] = true
		}
		pods, _ := podNetnsOrNone(h.Netns)
		for _, p := range pods {
			if ns, ok := nsOf(netnsPath(p)); ok {
				namespaces = append(namespaces, ns)
			}
		}
	}
	procs := readProcs()
	return selectProcs(procs, recorded, namespaces), func(pid int) bool {
		_, ok := recorded[pid]
		return ok || own[procs[pid].netns]
	}
}

// stopAll stops every process of the cluster; a few rounds, for what
// started while the first were stopping.
func (l *Layout) stopAll(grace time.Duration) error {
	for round := 0; round < 3; round++ {
		pids, gentle := l.hostProcs(l.Hosts)
		if len(pids) == 0 {
			return nil
		}
		if err := stopProcs(pids, gentle, grace); err != nil {
			return err
		}
	}
	if pids, _ := l.hostProcs(l.Hosts); len(pids) > 0 {
		return fmt.Errorf("devcluster: processes %v keep appearing", pids)
	}
	return nil
}

// Crash kills (SIGKILL, no grace) every process of one host (by name: a1
// or agent1), as a machine that loses power: its node stops renewing its
// lease.
func (c *Cluster) Crash(host string) error {
	h, ok := c.Host(host)
	if !ok {
		return fmt.Errorf("devcluster: no host %q", host)
	}
	pids, gentle := c.hostProcs([]Host{*h})
	return stopProcs(pids, gentle, 0)
}

// cleanupNode runs 'plainkube cleanup' for the host's node inside its
// namespace (ip netns exec, whose /sys shows the namespace's links):
// the service proxy's tables and the pod bridges there.
func (l *Layout) cleanupNode(h Host) error {
	if l.Binary == "" {
		return nil // the namespace's removal takes its tables and bridges with it
	}
	if _, err := os.Stat(l.Binary); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", h.Netns, l.Binary, "cleanup", "--data-dir", h.DataDir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("host %s: plainkube cleanup: %v: %s", h.Name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// unmountUnder detaches every mount below dir, the latest first.
func unmountUnder(dir string) error {
	points, err := mounts.Under(dir)
	if err != nil {
		return err
	}
	var errs []error
	for i := len(points) - 1; i >= 0; i-- {
		if err := syscall.Unmount(points[i], syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", points[i], err))
		}
	}
	return errors.Join(errs...)
}

// removeRuntimeLeftovers removes what the containers of a containerd
// (data directory dir) left outside it once their processes are gone:
// the shims' sockets, runc's state and the CNI plugins' cached results,
// found from the task bundles in containerd's state.
func removeRuntimeLeftovers(dir string) {
	tasks := filepath.Join(dir, "state", "io.containerd.runtime.v2.task")
	namespaces, _ := os.ReadDir(tasks)
	for _, ns := range namespaces {
		bundles, _ := os.ReadDir(filepath.Join(tasks, ns.Name()))
		for _, b := range bundles {
			id := b.Name()
			bundle := filepath.Join(tasks, ns.Name(), id)
			if addr, err := os.ReadFile(filepath.Join(bundle, "address")); err == nil {
				sock := strings.TrimPrefix(strings.TrimSpace(string(addr)), "unix://")
				if strings.HasPrefix(sock, "/run/containerd/s/") {
					os.Remove(sock)
				}
			}
			runcRoot := "/run/containerd/runc"
			var opts struct{ Root string }
			if b, err := os.ReadFile(filepath.Join(bundle, "options.json")); err == nil && json.Unmarshal(b, &opts) == nil && opts.Root != "" {
				runcRoot = opts.Root
			}
			os.RemoveAll(filepath.Join(runcRoot, ns.Name(), id))
			results, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", "*-"+id+"-*"))
			for _, r := range results {
				os.Remove(r)
			}
		}
	}
}

// deleteLink deletes a link of the host, if it is there.
func deleteLink(name string) error {
	if _, err := net.InterfaceByName(name); err != nil {
		return nil
	}
	if out, err := exec.Command("ip", "link", "delete", name).CombinedOutput(); err != nil {
		if _, gone := net.InterfaceByName(name); gone != nil {
			return nil // its namespace took it first
		}
		return fmt.Errorf("deleting link %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeTable deletes the cluster's nftables table, if it is there.
func removeTable(table string) error {
	nft, err := knftables.New(knftables.InetFamily, table)
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	tx := nft.NewTransaction()
	tx.Add(&knftables.Table{}) // so that the delete finds it
	tx.Delete(&knftables.Table{})
	if err := nft.Run(context.Background(), tx); err != nil {
		return fmt.Errorf("nftables table inet %s: %w", table, err)
	}
	return nil
}

// removeData removes the hosts' data directories, the kubeconfig and the
// state file; the logs stay. It refuses while anything is mounted below
// the directory (removing through a bind mount would reach outside it).
func removeData(l *Layout) error {
	if left, err := mounts.Under(l.Dir); err != nil || len(left) > 0 {
		return fmt.Errorf("devcluster: not removing the data in %s: still mounted there: %v %v", l.Dir, left, err)
	}
	var errs []error
	for _, h := range l.Hosts {
		if err := os.RemoveAll(h.DataDir); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range []string{l.Kubeconfig(), statePath(l.Dir)} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
