// Package statefulset is plainkube's StatefulSet controller: it keeps pods
// with stable identities <set>-<ordinal> (hostname, subdomain, per-ordinal
// PersistentVolumeClaims), as upstream's statefulset-controller does.
//
// The controller talks only to the API server, through informers on
// StatefulSets, pods, PersistentVolumeClaims and ControllerRevisions and a
// workqueue of StatefulSet keys. A reconcile of one StatefulSet
//
//  1. makes sure a ControllerRevision holds the current template (the
//     update revision) and finds the current revision (status
//     .currentRevision, or the update revision for a new set); old
//     revisions beyond spec.revisionHistoryLimit that no pod uses go;
//  2. claims the pods its selector matches;
//  3. asks the pure plan (plan.go: plan(State) Plan) for the next actions: create missing
//     ordinals (claims first) and replace failed pods — in OrderedReady one
//     at a time, lowest ordinal first, each waiting for the one before to be
//     Running and Ready; in Parallel all at once —, delete ordinals beyond
//     spec.replicas from the highest down, and, for RollingUpdate, delete
//     the highest-ordinal pod at or above the partition not on the update
//     revision once every pod is healthy (it is then recreated on the
//     update revision). OnDelete recreates deleted pods on the update
//     revision and deletes nothing itself;
//  4. applies them, recording events as upstream's;
//  5. writes the status kubectl rollout status reads, moving
//     currentRevision to the update revision once every pod runs it.
//
// Pod names are deterministic, so a reconcile on a stale cache at worst
// gets AlreadyExists (and looks again) or deletes with a UID precondition
// that fails harmlessly.
package statefulset
