// Package history keeps the ControllerRevisions of DaemonSets and
// StatefulSets: a revision's data (the pod template as a patch), its hash
// with the collision count, and comparisons, shared by both controllers.
package history
