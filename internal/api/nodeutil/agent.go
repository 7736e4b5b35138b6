package nodeutil

import (
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// SimulatedLabel marks nodes run by plainkube's node simulator: they run
// no containers and serve no agent API.
const SimulatedLabel = "plainkube.dev/simulated"

// IsSimulated reports whether the node is a simulated one.
func IsSimulated(n *corev1.Node) bool { return n.Labels[SimulatedLabel] == "true" }

// Host is a node's InternalIP, else its first address ("" if none).
func Host(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	if len(n.Status.Addresses) > 0 {
		return n.Status.Addresses[0].Address
	}
	return ""
}

// AgentAddress is host:port of a node's agent API: its Host and the
// kubelet endpoint port it reports ("" if either is missing).
func AgentAddress(n *corev1.Node) string {
	port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
	host := Host(n)
	if port == 0 || host == "" {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
