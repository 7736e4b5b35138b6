// Package stats holds the wire types of the kubelet summary API
// (/stats/summary, upstream's stats/v1alpha1 JSON): what a node agent
// serves and what the API server's metrics.k8s.io API reads. Both sides
// import it; neither imports the other.
package stats
