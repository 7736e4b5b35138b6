package network

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
)

// A pod bridge belongs to the node whose address allocations (host-local's
// state folder) hand out its range's addresses: the agent makes the bridge
// itself, before the bridge plugin would, with the alias "plainkube node
// <ipam dir>". Pods outlive their agent (as upstream's kubelet leaves
// containers running), so a node started on a fresh data directory may
// find the bridge of its range still carrying another node's pods, whose
// addresses its own, empty allocations would hand out again: two pods with
// one address. It refuses to start then, naming the other node's files.

const bridgeAliasPrefix = "plainkube node "

// BridgeOwner is the node a pod bridge's alias names (its address
// allocations folder), "" for a bridge that names none.
func BridgeOwner(alias string) string {
	owner, _ := strings.CutPrefix(alias, bridgeAliasPrefix)
	if owner == alias {
		return ""
	}
	return owner
}

// BridgeInUseError says that another node's pods are on the bridge of this
// node's range.
type BridgeInUseError struct {
	Bridge  string
	PodCIDR netip.Prefix
	Ports   int
	// Owner is the other node's address allocations folder ("" when the
	// bridge does not say).
	Owner string
}

func (e *BridgeInUseError) Error() string {
	by := "a node that did not say which (an older plainkube, or another program)"
	if e.Owner != "" {
		by = "the node whose address allocations are in " + e.Owner
	}
	return fmt.Sprintf("the pod bridge %s of %s carries pods of %s (%d attached): their addresses would be handed out again. "+
		"Stop that node and remove its pods (plainkube cleanup --data-dir <its data dir>), or give this node another pod range",
		e.Bridge, e.PodCIDR, by, e.Ports)
}

// claimBridge makes sure the bridge of prefix is this node's (ipamDir
// being its address allocations): it creates it, takes over an empty one,
// or refuses with a *BridgeInUseError one that carries another node's
// pods. An unnamed bridge with pods is taken to be this node's when its
// allocations hold addresses (a bridge an earlier plainkube made).
func claimBridge(prefix netip.Prefix, ipamDir string, mtu int) error {
	name := BridgeName(prefix)
	alias := bridgeAliasPrefix + ipamDir
	link, err := netlink.LinkByName(name)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu}}
		if err := netlink.LinkAdd(br); err != nil {
			return fmt.Errorf("creating the pod bridge %s: %w", name, err)
		}
		if link, err = netlink.LinkByName(name); err != nil {
			return err
		}
		return setAlias(link, alias)
	}
	if err != nil {
		return fmt.Errorf("the pod bridge %s: %w", name, err)
	}
	if link.Type() != "bridge" {
		return fmt.Errorf("%s, the name of the pod bridge of %s, is a %s device", name, prefix, link.Type())
	}
	owner := link.Attrs().Alias
	if owner == alias {
		return nil
	}
	ports, err := bridgePorts(name)
	if err != nil {
		return err
	}
	ours := ports == 0 || (owner == "" && holdsAddresses(ipamDir))
	if !ours {
		return &BridgeInUseError{Bridge: name, PodCIDR: prefix, Ports: ports, Owner: BridgeOwner(owner)}
	}
	return setAlias(link, alias)
}

func setAlias(link netlink.Link, alias string) error {
	if err := netlink.LinkSetAlias(link, alias); err != nil {
		return fmt.Errorf("naming the pod bridge %s: %w", link.Attrs().Name, err)
	}
	return nil
}

// bridgePorts counts the interfaces attached to the bridge name.
func bridgePorts(name string) (int, error) {
	ents, err := os.ReadDir(filepath.Join("/sys/class/net", name, "brif"))
	if err != nil {
		return 0, fmt.Errorf("the pod bridge %s's interfaces: %w", name, err)
	}
	return len(ents), nil
}

// holdsAddresses reports whether host-local's state under ipamDir holds an
// allocated address (a file named after it).
func holdsAddresses(ipamDir string) bool {
	nets, _ := os.ReadDir(ipamDir)
	for _, n := range nets {
		files, _ := os.ReadDir(filepath.Join(ipamDir, n.Name()))
		for _, f := range files {
			if _, err := netip.ParseAddr(f.Name()); err == nil {
				return true
			}
		}
	}
	return false
}
