// Package network is the node agent's part of pod networking: the CNI
// configuration of the node's pod network, and each pod's name resolution.
//
// The agent (internal/kubelet) hands the Node's spec.podCIDR to a
// PodNetwork, which writes one CNI network configuration list into the
// runtime's CNI directory: a bridge per pod range (BridgeName), host-local
// addresses over the range, portmap for hostPorts and loopback. The
// runtime (containerd's CRI, which watches that directory) then calls the
// plugins for every sandbox not on the host network; routes between
// nodes' ranges are internal/network's. The agent makes the bridge itself
// and names its node on it (bridge.go): a node whose range's bridge
// carries another node's pods refuses to start (BridgeInUseError).
//
// Names, as upstream's kubelet sets them up: PodDNS is a pod's resolver
// configuration from its dnsPolicy and dnsConfig (the runtime writes the
// sandbox's /etc/resolv.conf from it), and HostsFile is the /etc/hosts
// the agent mounts into containers of pods off the host network. Both are
// pure.
package network
