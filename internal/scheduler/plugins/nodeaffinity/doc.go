// Package nodeaffinity is the NodeAffinity plugin. As a filter it keeps
// the nodes that match the pod's spec.nodeSelector and its required node
// affinity ("node(s) didn't match Pod's node affinity/selector"); as a
// score it sums the weights of the preferred node affinity terms a node
// matches. Matching is k8s.io/component-helpers' nodeaffinity.
package nodeaffinity
