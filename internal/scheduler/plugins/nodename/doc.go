// Package nodename is the NodeName filter: a pod that names a node in
// spec.nodeName fits only there.
package nodename
