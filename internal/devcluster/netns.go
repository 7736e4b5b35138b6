package devcluster

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// netnsDir is where iproute2 keeps named network namespaces.
const netnsDir = "/run/netns"

func netnsPath(name string) string { return filepath.Join(netnsDir, name) }

// InNetns runs fn on an OS thread that has entered the named network
// namespace, and returns the thread to the namespace it had before; a
// thread that could not return stays locked and ends with its goroutine
// (Go throws such a thread away; Go's main thread it keeps, which is why
// returning matters: a process whose main thread stayed behind would be
// one of the namespace's processes). What fn opens there (sockets,
// /proc/sys/net files) and the processes it starts belong to the
// namespace; the mount namespace stays the machine's, so the hosts'
// mounts under the cluster's directory are the machine's to see and remove.
func InNetns(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		f, err := os.Open(netnsPath(name))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering the network namespace %s: %w", name, err)
			return
		}
		err = fn()
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else: stays locked, and the thread ends with this goroutine
		errc <- err
	}()
	return <-errc
}

// startIn starts cmd in the named network namespace.
func startIn(netns string, cmd *exec.Cmd) error {
	return InNetns(netns, cmd.Start)
}

// ipBatch runs iproute2 commands (one a line, without "ip") in one
// process, in the named network namespace ("": the machine's).
func ipBatch(netns string, lines []string) error {
	args := []string{"-batch", "-"}
	if netns != "" {
		args = append([]string{"-n", netns}, args...)
	}
	cmd := exec.Command("ip", args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip -batch: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// namedNetns lists the named network namespaces whose names pass keep.
func namedNetns(keep func(string) bool) []string {
	entries, _ := os.ReadDir(netnsDir)
	var names []string
	for _, e := range entries {
		if keep(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names
}

// podNetns lists the pods' network namespaces (containerd's
// /run/netns/cni-…) that the named node namespace has a veth into: the
// pods of that host, found from the namespace alone, so also after its
// containerd and the pods' shims are gone.
func podNetns(node string) ([]string, error) {
	var h *netlink.Handle
	if err := InNetns(node, func() (err error) {
		h, err = netlink.NewHandle() // its sockets stay in the namespace
		return err
	}); err != nil {
		return nil, err
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return nil, err
	}
	peers := map[int]bool{}
	for _, l := range links {
		if _, ok := l.(*netlink.Veth); ok && l.Attrs().NetNsID >= 0 {
			peers[l.Attrs().NetNsID] = true
		}
	}
	var found []string
	for _, name := range namedNetns(func(n string) bool { return strings.HasPrefix(n, "cni-") }) {
		f, err := os.Open(netnsPath(name))
		if err != nil {
			continue
		}
		id, err := h.GetNetNsIdByFd(int(f.Fd()))
		f.Close()
		if err == nil && id >= 0 && peers[id] {
			found = append(found, name)
		}
	}
	return found, nil
}

// removeNetns unmounts and removes a named network namespace, as
// 'ip netns delete' does; the namespace ends with its last process.
func removeNetns(name string) error {
	p := netnsPath(name)
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		return fmt.Errorf("unmounting %s: %w", p, err)
	}
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// setSysctl writes a sysctl (net.ipv4.ip_forward) inside a namespace.
func setSysctl(netns, key, value string) error {
	return InNetns(netns, func() error {
		return os.WriteFile(filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/")), []byte(value), 0o644)
	})
}

// PodNetns names the network namespace (cni-…) of the pod with address
// ip on one of the cluster's hosts.
func (c *Cluster) PodNetns(ip netip.Addr) (string, error) {
	for _, h := range c.Hosts {
		names, err := podNetnsOrNone(h.Netns)
		if err != nil {
			return "", err
		}
		for _, name := range names {
			var has bool
			err := InNetns(name, func() error {
				addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
				for _, a := range addrs {
					if addr, ok := netip.AddrFromSlice(a.IP); ok && addr.Unmap() == ip {
						has = true
					}
				}
				return err
			})
			if err != nil {
				return "", err
			}
			if has {
				return name, nil
			}
		}
	}
	return "", fmt.Errorf("devcluster: no pod network namespace holds %s", ip)
}
