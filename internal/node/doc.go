// Package node assembles what runs on every node of a plainkube cluster,
// each a client of the API server and of nothing else: the node agent
// (package kubelet: pods on containerd), the pod network (package
// network: routes to the other nodes' pods, masquerading out of the
// cluster), the service proxy (package proxy: Services to nftables), the
// NetworkPolicy enforcer (package netpol: policies to nftables, for the
// node's own pods) and the node's DNS answerer (package dns, behind the
// kube-dns Service through an EndpointSlice of the node's own). The pod
// network and the proxy share the factory's informer of Nodes. 'plainkube
// server' runs one on its host, 'plainkube agent' on a joined host.
package node
