// Package network is the pod network between nodes: on every node it
// makes the other nodes' pod ranges (Node spec.podCIDRs, which the node
// IPAM controller hands out) reachable from this node and its pods by
// their own addresses, and masquerades what the node's pods send out of
// the cluster. It is a client of the API server only: it watches every
// Node through the node's shared informer factory, and writes its own
// Node (its VXLAN endpoint's annotations, its NetworkUnavailable
// condition) and events.
//
// Two backends (Backend). host-gw routes each other node's pod range
// through that node's InternalIP, which must be on a subnet of this host
// (the nodes share a link); a node that is not is named in an event, the
// log and the condition, never left out silently. vxlan makes a VXLAN
// device (VXLANDevice, VNI 1, UDP 8472, over the link of the node's
// address, MTU that link's less 50) with the first address of the node's
// pod range; each node publishes the device's hardware address and
// address on its Node (AnnotationVXLANMAC, AnnotationVXLANIP), and every
// other node routes the range through that address on the device, with a
// permanent neighbour entry for it and a forwarding entry sending its
// frames to the node's InternalIP. PodMTU is the pods' MTU for a backend
// (the node agent writes it into the CNI configuration).
//
// The core is pure: Desired (plan.go) turns this node and the list of
// Nodes into the routes, neighbour and forwarding entries wanted, and the
// nodes it cannot reach; masqueradeRules (masquerade.go) are the nftables
// rules of the node's table (DefaultTable, families ip and ip6: pod
// traffic to outside the cluster's pod and Service ranges is
// masqueraded). A node whose address is one of this host's (two nodes on
// one host, as tests run them) gets no route: its pods' bridge is here.
// The VXLAN device is one per host (network namespace). Network (network.go) is the driver: on every
// Node change and every ResyncPeriod it applies the plan with netlink
// (links.go), touching only routes of its own protocol mark
// (RouteProtocol) and entries of its own device, removing those no longer
// wanted, and rewrites its table. Routes and tables outlive Run (pods
// outlive the node agent); Cleanup removes them.
package network
