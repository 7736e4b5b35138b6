package network

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
)

// CNINetworkName is the name of the network the agent configures.
const (
	CNINetworkName = "plainkube"
	// DefaultPodCIDR is the first range the node IPAM controller hands
	// out (of 10.42.0.0/16): a one-node set-up without the controller
	// manager may give it to its node through Options.PodCIDR.
	DefaultPodCIDR = "10.42.0.0/24"
	// cniConfFile sorts first, so that it is the one containerd uses.
	cniConfFile = "10-plainkube.conflist"
)

// BridgeName is the Linux bridge of the pods of podCIDR: "pk" and the
// range's network address in hex (pk0a2a0000 for 10.42.0.0/24). A bridge
// per range means a host that served another range before (or two agents
// on one host, as in tests) never finds its bridge holding a gateway
// address of the wrong subnet, which the bridge plugin refuses.
func BridgeName(podCIDR netip.Prefix) string {
	b := podCIDR.Masked().Addr().AsSlice()
	if len(b) > 6 {
		b = b[:6] // an interface name has at most 15 characters
	}
	return fmt.Sprintf("pk%x", b)
}

// cniConfig renders the CNI configuration list for podCIDR: a bridge
// (the gateway of the pods, hairpin so that a pod reaches itself through
// a hostPort; with mtu, when not 0, as the bridge's and the pods'
// interfaces' MTU), host-local address management over podCIDR with its
// state in ipamDir, portmap for hostPort, and loopback. The bridge does
// not masquerade: pods reach other nodes' pods by their own addresses,
// and the node's pod network (internal/network) masquerades only what
// leaves the cluster.
func cniConfig(podCIDR, ipamDir string, mtu int) ([]byte, error) {
	prefix, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR %q: %w", podCIDR, err)
	}
	prefix = prefix.Masked()
	route := "0.0.0.0/0"
	if prefix.Addr().Is6() {
		route = "::/0"
	}
	bridge := map[string]any{
		"type":        "bridge",
		"bridge":      BridgeName(prefix),
		"isGateway":   true,
		"hairpinMode": true,
		"ipam": map[string]any{
			"type":    "host-local",
			"ranges":  [][]map[string]string{{{"subnet": prefix.String()}}},
			"routes":  []map[string]string{{"dst": route}},
			"dataDir": ipamDir,
		},
	}
	if mtu > 0 {
		bridge["mtu"] = mtu
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       CNINetworkName,
		"plugins": []any{
			bridge,
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
			map[string]any{"type": "loopback"},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// writeCNIConfig writes the configuration for podCIDR into confDir, if it
// is not there already (containerd reloads on every change).
func writeCNIConfig(confDir, podCIDR, ipamDir string, mtu int) error {
	b, err := cniConfig(podCIDR, ipamDir, mtu)
	if err != nil {
		return err
	}
	p := filepath.Join(confDir, cniConfFile)
	if old, err := os.ReadFile(p); err == nil && string(old) == string(b) {
		return nil
	}
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	// containerd only reads *.conflist/*.conf/*.json, so the temporary
	// file is never seen half-written.
	return os.Rename(tmp, p)
}

// PodNetwork is the node's pod network: the CNI configuration for the
// Node's pod CIDR in the runtime's CNI directory, written once the Node
// has a pod CIDR and again if it changes. It is safe for concurrent use.
type PodNetwork struct {
	confDir, ipamDir string
	mtu              int
	mu               sync.Mutex
	podCIDR          string // the one configured
}

// NewPodNetwork makes the pod network whose configuration goes into
// confDir (the runtime's CNI directory), with the host-local address
// state under ipamDir, and pods' interfaces of mtu bytes (0: the
// bridge plugin's default). Nothing is written until Ensure.
func NewPodNetwork(confDir, ipamDir string, mtu int) *PodNetwork {
	if abs, err := filepath.Abs(ipamDir); err == nil {
		ipamDir = abs
	}
	return &PodNetwork{confDir: confDir, ipamDir: ipamDir, mtu: mtu}
}

// Ensure configures the pod network for podCIDR, if it is given and not
// the one configured: it claims the range's bridge (a *BridgeInUseError
// when another node's pods are on it) and writes the configuration; it
// reports whether it wrote one.
func (n *PodNetwork) Ensure(podCIDR string) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if podCIDR == "" || podCIDR == n.podCIDR {
		return false, nil
	}
	prefix, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return false, fmt.Errorf("pod CIDR %q: %w", podCIDR, err)
	}
	if err := claimBridge(prefix.Masked(), n.ipamDir, n.mtu); err != nil {
		return false, err
	}
	if err := writeCNIConfig(n.confDir, podCIDR, n.ipamDir, n.mtu); err != nil {
		return false, fmt.Errorf("writing the CNI configuration: %w", err)
	}
	n.podCIDR = podCIDR
	return true, nil
}

// Configured reports whether the pod network has a pod CIDR.
func (n *PodNetwork) Configured() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.podCIDR != ""
}
