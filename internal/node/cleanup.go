package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"

	"plainkube.dev/plainkube/internal/mounts"
	"plainkube.dev/plainkube/internal/netpol"
	"plainkube.dev/plainkube/internal/network"
	"plainkube.dev/plainkube/internal/proxy"
)

// bridgeName matches the pod bridges the node agent creates (one per pod
// range: pk and the range's address in hex; see BridgeName in internal/kubelet/network).
var bridgeName = regexp.MustCompile(`^pk[0-9a-f]{8}$`)

// Cleanup removes what a node that did not stop cleanly left on the host:
// the service proxy's and the NetworkPolicy enforcer's nftables tables
// (netpolTable "" is netpol's default), the pod network's (its table, its
// routes to other nodes' pods, its VXLAN device), the pod bridges, the
// pod address allocations under nodeDir, and the mounts under it (pods'
// tmpfs volumes). Containers still running are containerd's to stop. It
// says what it removed through report.
func Cleanup(ctx context.Context, nodeDir, proxyTable, netpolTable string, report func(string)) error {
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
	ifaces, _ := net.Interfaces()
	for _, i := range ifaces {
		if _, err := os.Stat(filepath.Join("/sys/class/net", i.Name, "bridge")); err != nil || !bridgeName.MatchString(i.Name) {
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
