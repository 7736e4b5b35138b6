// Package defaulttolerationseconds is upstream's DefaultTolerationSeconds
// admission plugin: a pod created or updated without a toleration of the
// node.kubernetes.io/not-ready or node.kubernetes.io/unreachable NoExecute
// taints gets one for 300 seconds, so the node lifecycle controller evicts
// it five minutes after its node stops being ready or reachable, not at
// once.
package defaulttolerationseconds
