package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"plainkube.dev/plainkube/internal/kubelet/containerd"
	podnetwork "plainkube.dev/plainkube/internal/kubelet/network"
	"plainkube.dev/plainkube/internal/mounts"
	"plainkube.dev/plainkube/internal/netpol"
	"plainkube.dev/plainkube/internal/network"
	"plainkube.dev/plainkube/internal/procs"
	"plainkube.dev/plainkube/internal/proxy"
)

// bridgeName matches the pod bridges the node agent creates (one per pod
// range: pk and the range's address in hex; see BridgeName in internal/kubelet/network).
var bridgeName = regexp.MustCompile(`^pk[0-9a-f]{8}$`)

// Cleanup removes what a stopped node left on the host: its pods (their
// containers, network namespaces and addresses, through the node's own
// containerd, started for the purpose; pods of an external containerd are
// left to it), the service proxy's and the NetworkPolicy enforcer's
// nftables tables (netpolTable "" is netpol's default), the pod network's
// (its table, its routes to other nodes' pods, its VXLAN device), its pod
// bridges and those that name no node (another node's are left), the pod
// address allocations under nodeDir, and the mounts under
// it (pods' tmpfs and image volumes). It refuses while the node's containerd runs.
// It says what it removed through report.
func Cleanup(ctx context.Context, nodeDir, proxyTable, netpolTable string, report func(string)) error {
	if err := removePods(ctx, filepath.Join(nodeDir, "containerd"), report); err != nil {
		return err
	}
	var errs []error
	if err := proxy.RemoveTables(ctx, proxyTable); err != nil {
		errs = append(errs, fmt.Errorf("nftables: %w", err))
	} else {
		report("removed the nftables tables ip/ip6 " + proxyTable)
	}
	if err := network.Cleanup(ctx, network.DefaultTable, report); err != nil {
		errs = append(errs, fmt.Errorf("pod network: %w", err))
	}
	if netpolTable == "" {
		netpolTable = netpol.DefaultTable
	}
	if err := netpol.RemoveTables(ctx, netpolTable); err != nil {
		errs = append(errs, fmt.Errorf("nftables: %w", err))
	} else {
		report("removed the nftables tables ip/ip6 " + netpolTable)
	}
	ipamDir, _ := filepath.Abs(filepath.Join(nodeDir, "cni", "ipam"))
	ifaces, _ := net.Interfaces()
	for _, i := range ifaces {
		if _, err := os.Stat(filepath.Join("/sys/class/net", i.Name, "bridge")); err != nil || !bridgeName.MatchString(i.Name) {
			continue
		}
		alias, _ := os.ReadFile(filepath.Join("/sys/class/net", i.Name, "ifalias"))
		if owner := podnetwork.BridgeOwner(strings.TrimSpace(string(alias))); owner != "" && owner != ipamDir {
			report("left the pod bridge " + i.Name + ": another node's (address allocations in " + owner + ")")
			continue
		}
		if out, err := exec.CommandContext(ctx, "ip", "link", "delete", i.Name).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("deleting bridge %s: %v: %s", i.Name, err, out))
			continue
		}
		report("deleted the pod bridge " + i.Name)
	}
	if mounts, err := mounts.Under(nodeDir); err == nil {
		for i := len(mounts) - 1; i >= 0; i-- { // the latest first
			if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", mounts[i], err))
				continue
			}
			report("unmounted " + mounts[i])
		}
	}
	ipam := filepath.Join(nodeDir, "cni", "ipam")
	if _, err := os.Stat(ipam); err == nil {
		if err := os.RemoveAll(ipam); err != nil {
			errs = append(errs, err)
		} else {
			report("removed the pod address allocations in " + ipam)
		}
	}
	return errors.Join(errs...)
}

// removePods stops and removes every pod of the containerd whose files are
// in dir, if the node ran its own (dir holds its configuration).
func removePods(ctx context.Context, dir string, report func(string)) error {
	if _, err := os.Stat(filepath.Join(dir, "config.toml")); err != nil {
		return nil
	}
	cfg := filepath.Join(dir, "config.toml")
	// A node that has just stopped may leave its containerd a moment to end.
	for deadline := time.Now().Add(10 * time.Second); containerdRunning(cfg); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the node is still running (a containerd runs with %s): stop it first", cfg)
		}
	}
	if err := containerd.CheckInstalled(""); err != nil {
		return fmt.Errorf("removing the node's pods: %w", err)
	}
	rt, err := containerd.Start(ctx, containerd.Options{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return fmt.Errorf("starting the node's containerd to remove its pods: %w", err)
	}
	n, err := rt.RemoveAllPods(ctx)
	rt.Stop()
	if n > 0 {
		report(fmt.Sprintf("removed %d pods (their containers, network namespaces and addresses)", n))
	}
	if err != nil {
		return fmt.Errorf("removing the node's pods: %w", err)
	}
	killOrphanShims(containerd.Socket(dir), report)
	return nil
}

// killOrphanShims kills the shims still serving the containerd of socket
// once it has stopped: a pod whose start a stopping node interrupted can
// leave one that the CRI never listed (no sandbox was recorded), with no
// container in it.
func killOrphanShims(socket string, report func(string)) {
	abs, err := filepath.Abs(socket)
	if err != nil {
		return
	}
	for _, p := range procs.List() {
		i := slices.Index(p.Args, "-address")
		if !strings.HasPrefix(filepath.Base(p.Args[0]), "containerd-shim") || i < 0 || i+1 == len(p.Args) || p.Args[i+1] != abs {
			continue
		}
		if err := syscall.Kill(p.PID, syscall.SIGKILL); err == nil {
			report(fmt.Sprintf("killed the orphaned shim %d (%s)", p.PID, strings.Join(p.Args, " ")))
		}
	}
}

// containerdRunning reports whether a containerd process runs with the
// configuration file cfg.
func containerdRunning(cfg string) bool {
	for _, args := range procs.CommandLines() {
		if filepath.Base(args[0]) == "containerd" && slices.Contains(args, cfg) {
			return true
		}
	}
	return false
}
