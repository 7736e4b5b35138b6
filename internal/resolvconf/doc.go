// Package resolvconf reads resolver configuration files (resolv.conf(5)):
// Parse reads one, Host reads the node's own, following a local
// systemd-resolved stub to the servers behind it.
//
// It is a neutral utility shared by the node agent (which writes pods'
// resolver configuration from the host's) and the cluster DNS server
// (which forwards names outside the cluster to the host's servers).
package resolvconf
