// Package dns is the cluster DNS server: it answers the names of the
// Kubernetes DNS specification (Services, their endpoints and ports,
// pods, reverse lookups) under the cluster domain as CoreDNS's kubernetes
// plugin does in kubeadm's configuration, and forwards all other names to
// the host's resolvers through a small cache.
//
// It answers from an index kept by client-go informers on Services and
// EndpointSlices (New registers them on the caller's factory), never
// from an API call per query. Run serves UDP and TCP until its context
// ends, answering SERVFAIL for the cluster's names until the informers
// have synced; Ready says when they have. Over UDP, answers made from the
// index are kept packed until it next changes (udp.go).
//
// The node wiring runs one Server on every node, on the node's address.
// Advertise makes it an endpoint of the kube-dns Service through the
// node's own EndpointSlice (kube-system/kube-dns-<node>), so that pods
// reach it at the Service's cluster IP, their node's preferably.
package dns
