// Package proxy is plainkube's service proxy: on every node it turns
// Services and their EndpointSlices into nftables rules (through
// sigs.k8s.io/knftables), as upstream's kube-proxy does in its nftables
// mode. It is a client of the API server only, through informers.
//
// All rules live in one table of the proxy's own per IP family (ip and
// ip6 "plainkube"). A packet to a Service costs one lookup in a verdict
// map (service-ips: address . protocol . port → the Service's chain), so
// it does not grow with the number of Services; the Service's chain DNATs
// to a random slot of its own range in one shared map of endpoints
// (endpoint-slots-<protocol>), so that a replaced endpoint is one changed
// element and nft never reads a map per Service. A pod sent to itself is
// masqueraded by one rule (hairpin-pairs). Only with sessionAffinity does
// each endpoint get a chain, which remembers its clients in a set. Filter chains,
// which run after DNAT, reject what is still addressed to a Service: a
// Service without endpoints, another port of a ClusterIP, an unallocated
// address of the service range — such packets never leave the node.
//
// The core is pure: servicePorts (model.go) resolves a Service and its
// slices for this node (ready endpoints, else serving-terminating ones;
// topology hints; traffic policies); render (rules.go) turns them into
// the Service's chains, sets and map elements; tableState (table.go)
// diffs them against what was written last into a knftables transaction,
// so one changed EndpointSlice rewrites only its Service's part; when
// that part is endpoint and hairpin elements only, they go over netlink
// in one atomic batch (netfilter.ElementWriter, elements.go), without
// nft's reading of the whole table before each transaction. Proxy
// (proxy.go) is the driver: informer events mark Services dirty, Run
// syncs them, rewrites the whole table at start, every ResyncPeriod and
// after a failed transaction, and leaves only a fence rejecting the
// service range when it stops (pods outlive it).
package proxy
