// Package devcluster makes a multi-host plainkube cluster on one machine,
// for tests, demos and CI: 'plainkube dev cluster' and the end-to-end
// tests' multi-host clusters share it.
//
// Each host is a network namespace (pk-ID-s0 for the server, pk-ID-a1,
// pk-ID-a2, … for the agents, ID a hash of the cluster's directory), whose
// eth0 is one end of a veth pair; the other end is a port of a Linux
// bridge of the cluster's own on the machine (pk-ID). All hosts share that
// one link, as machines on one switch do, so routes between the nodes'
// pod ranges through each other's addresses (host-gw) work. The addresses
// are of a /24 the harness owns (of 10.250.0.0/16, chosen from the hash,
// or Options.Subnet): the bridge holds .1, the hosts .10, .11, …; each
// namespace's only route out is through .1. An nftables table of the
// machine (inet pk-ID) drops whatever would be forwarded from the bridge
// to another interface or into it from another, so the hosts reach one
// another and the machine, and nothing beyond; and the hosts' DNS
// answerers forward outside names to a port where nothing listens
// (DefaultDNSUpstream) unless told otherwise.
//
// The server runs 'plainkube server' in the first namespace; each agent
// joins it with the real join path ('plainkube agent --token
// --ca-cert-hash' with the server's join token and CA pin), with a data
// directory, containerd and CNI state of its own under DIR/aN. Processes
// are started in a namespace by a thread that entered it (the mount
// namespace stays the machine's, so the nodes' mounts are seen and removed
// from outside) and outlive the command that started them. Their pids are
// in DIR/devcluster.json with everything else Down needs; Down also finds
// processes by their namespace, the pods' namespaces by the veths into
// them, and the namespaces and links by their names, so it cleans up a
// crashed run too.
//
// Images: every host's containerd keeps its own content store, so an image
// is put into each (Cluster.Image and LoadImage run 'plainkube image' once
// per host, against that host's containerd socket; 'plainkube dev cluster
// load' does the same). A shared store would save the copies but tie the
// hosts' containerds together, which the hosts of a real cluster are not.
package devcluster
