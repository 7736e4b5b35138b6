// Package imagelocality is the ImageLocality score: it prefers nodes that
// already have the pod's container images (from node.status.images),
// weighing each image by its size and by how widely it is spread across
// nodes, so that pods do not pile onto the few nodes with a rare image.
package imagelocality
