package network

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestClaimBridge (root): a node makes its range's bridge and names
// itself on it; it takes over an empty bridge of another node, and one
// that names no node when its own allocations hold addresses; it refuses
// one carrying another node's pods.
func TestClaimBridge(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make bridges")
	}
	prefix := netip.MustParsePrefix("10.250.7.0/24") // a range no other test uses
	name := BridgeName(prefix)
	netlink.LinkDel(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}})
	t.Cleanup(func() { netlink.LinkDel(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}) })
	mine, theirs := t.TempDir(), t.TempDir()
	alias := func() string {
		t.Helper()
		l, err := netlink.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		return l.Attrs().Alias
	}

	if err := claimBridge(prefix, theirs, 0); err != nil {
		t.Fatalf("a new bridge: %v", err)
	}
	if got := alias(); got != bridgeAliasPrefix+theirs {
		t.Fatalf("alias %q", got)
	}
	if err := claimBridge(prefix, theirs, 0); err != nil {
		t.Fatalf("its own bridge again: %v", err)
	}
	if err := claimBridge(prefix, mine, 0); err != nil {
		t.Fatalf("another node's empty bridge: %v", err)
	}
	if got := alias(); got != bridgeAliasPrefix+mine {
		t.Fatalf("alias after taking over %q", got)
	}

	// A pod of "mine" on it: "theirs" is refused, naming "mine".
	br, _ := netlink.LinkByName(name)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "pkclaimtest0", MasterIndex: br.Attrs().Index}, PeerName: "pkclaimtest1"}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { netlink.LinkDel(veth) })
	err := claimBridge(prefix, theirs, 0)
	var inUse *BridgeInUseError
	if !errors.As(err, &inUse) || inUse.Owner != mine || inUse.Ports != 1 {
		t.Fatalf("another node's bridge with a pod: %v", err)
	}
	t.Log(err)

	// A bridge that names no node, with a pod: "theirs" is refused until
	// its allocations hold an address.
	if err := netlink.LinkSetAlias(br, ""); err != nil {
		t.Fatal(err)
	}
	if err := claimBridge(prefix, theirs, 0); !errors.As(err, &inUse) || inUse.Owner != "" {
		t.Fatalf("an unnamed bridge with a pod, no allocations: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(theirs, CNINetworkName), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(theirs, CNINetworkName, "10.250.7.2"), []byte("id"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := claimBridge(prefix, theirs, 0); err != nil {
		t.Fatalf("an unnamed bridge with a pod, allocations held: %v", err)
	}
	if got := alias(); got != bridgeAliasPrefix+theirs {
		t.Fatalf("alias %q", got)
	}
}
