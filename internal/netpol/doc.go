// Package netpol enforces NetworkPolicy (networking.k8s.io/v1) on one
// node with nftables (through sigs.k8s.io/knftables). Every node runs it,
// as a client of the API server only: it watches NetworkPolicies, Pods
// and Namespaces through the node's shared informer factory.
//
// A node enforces only its own pods' side of a connection: ingress to the
// pods it runs, egress from them. Traffic between nodes is covered by its
// two ends. The rules sit in a table of their own per IP family (ip and
// ip6 "plainkube-netpol"), in base chains on the forward hook (pod
// traffic, routed or bridged — the pod bridge's traffic reaches the ip
// hooks through br_netfilter, which Run switches on) and the input hook
// (a pod's egress to the node itself). Both hooks come after the service
// proxy's DNAT in prerouting, so traffic through a Service is judged by
// the endpoint it was sent to. What the node itself sends (kubelet
// probes) passes, as upstream's implementations let it; replies to
// allowed connections pass (ct state established,related).
//
// The table's shape keeps a packet's cost and a change's cost small:
//
//   - two verdict maps, ingress-pods and egress-pods, send a packet to or
//     from a local pod that a policy isolates to its namespace's chain
//     (one element per isolated pod);
//   - a namespace's chain jumps, for each of its policies, to the
//     policy's chain when the pod is in the policy's set of selected pods,
//     and drops what none of them accepted;
//   - a policy's chain has one rule per (peer match, port) of each of its
//     rules, matching named sets of peer pods' addresses and of
//     (address . protocol . port) tuples for named ports, and ipBlock
//     ranges written in the rule (no interval sets: nft dumps the
//     elements of every interval set of a table before each transaction).
//
// So a new pod that a policy selects, or one that becomes a peer, is an
// element added to a set; a changed policy rewrites its own chains only.
// A policy that selects no pod of this node writes nothing.
//
// The core is pure: compile (model.go) turns a policy and the cluster's
// State into the addresses and ports it allows, render (rules.go) into
// nftables chains, sets and elements, tableState (table.go) diffs them
// against what was written into one knftables transaction, and allows
// (allow.go) answers the same question for one flow, which the driver
// uses to delete the conntrack entries of connections a change forbids
// (conntrack.go). Netpol (netpol.go) is the driver: informer events mark
// policies dirty, Run syncs them, and rewrites the whole table at start,
// every ResyncPeriod and after a failed transaction. The table stays when
// Run stops (pods outlive the node agent); plainkube cleanup removes it.
package netpol
