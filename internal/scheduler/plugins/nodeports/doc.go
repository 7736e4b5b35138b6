// Package nodeports is the NodePorts filter: a pod asking for a host port
// (hostPort, with hostIP and protocol) fits only on nodes where no pod
// holds a conflicting one ("node(s) didn't have free ports for the
// requested pod ports").
package nodeports
