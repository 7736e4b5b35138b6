package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod networking: the agent writes one CNI network configuration into
// containerd's CNI directory, and containerd's CRI (which watches that
// directory) calls the plugins for every sandbox not on the host network.

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
// (the gateway of the pods, masquerading their traffic to other networks,
// hairpin so that a pod reaches itself through a hostPort), host-local
// address management over podCIDR with its state in ipamDir, portmap for
// hostPort, and loopback.
func cniConfig(podCIDR, ipamDir string) ([]byte, error) {
	prefix, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR %q: %w", podCIDR, err)
	}
	prefix = prefix.Masked()
	route := "0.0.0.0/0"
	if prefix.Addr().Is6() {
		route = "::/0"
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       CNINetworkName,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      BridgeName(prefix),
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": prefix.String()}}},
					"routes":  []map[string]string{{"dst": route}},
					"dataDir": ipamDir,
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
			map[string]any{"type": "loopback"},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// writeCNIConfig writes the configuration for podCIDR into confDir, if it
// is not there already (containerd reloads on every change).
func writeCNIConfig(confDir, podCIDR, ipamDir string) error {
	b, err := cniConfig(podCIDR, ipamDir)
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

// ensureNetwork configures the pod network for the Node's pod CIDR, if it
// has one and it is not the one configured.
func (a *Agent) ensureNetwork(podCIDR string) error {
	a.netMu.Lock()
	defer a.netMu.Unlock()
	if podCIDR == "" || podCIDR == a.podCIDR {
		return nil
	}
	ipam := filepath.Join(a.opts.DataDir, "cni", "ipam")
	if err := writeCNIConfig(a.rt.CNIConfDir(), podCIDR, ipam); err != nil {
		return fmt.Errorf("writing the CNI configuration: %w", err)
	}
	a.podCIDR = podCIDR
	a.log.Info("pod network configured", "podCIDR", podCIDR)
	return nil
}

// awaitPodCIDR waits for a Node registered without a pod CIDR to be given
// one (by the node IPAM controller), checking every second, and then
// configures the pod network. Until then only hostNetwork pods can start.
func (a *Agent) awaitPodCIDR(ctx context.Context) {
	warned := false
	for {
		a.netMu.Lock()
		done := a.podCIDR != ""
		a.netMu.Unlock()
		if done {
			return
		}
		n, err := a.cs.CoreV1().Nodes().Get(ctx, a.opts.NodeName, metav1.GetOptions{})
		if err == nil && n.Spec.PodCIDR != "" {
			if err := a.ensureNetwork(n.Spec.PodCIDR); err != nil {
				a.log.Warn("configuring the pod network", "err", err)
			}
		} else if !warned {
			a.log.Warn("the node has no pod CIDR yet: only hostNetwork pods can start until it has")
			warned = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
