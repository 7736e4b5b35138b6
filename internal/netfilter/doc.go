// Package netfilter is what the node's nftables programs share — the
// service proxy (internal/proxy), the pod network's masquerading
// (internal/network) and the NetworkPolicy enforcer (internal/netpol):
// the names of the two IP families in rules and sets, the removal of a
// table from both families, the kernel switches (sysctls) their rules
// depend on, and ElementWriter, which writes element changes over netlink
// without nft's reading of the whole table first. Each program keeps its own tables; nothing here
// decides what goes into them.
package netfilter
