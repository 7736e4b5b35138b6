// Package deployment is plainkube's deployment controller: it rolls a
// Deployment's pod template out through ReplicaSets, as upstream's
// deployment-controller does.
//
// A deployment owns ReplicaSets (ownerReferences with controller and
// blockOwnerDeletion; matching orphans are adopted, ReplicaSets that stop
// matching the selector are released). The "new" one has the deployment's
// template; it is named <deployment>-<pod-template-hash> and carries the
// hash (ComputeHash: FNV-32a over the template as upstream prints it, plus
// status.collisionCount) as the pod-template-hash label in its labels,
// selector and template. Every other ReplicaSet is "old". Each ReplicaSet
// carries deployment.kubernetes.io/revision (the new one's is above every
// old one's, and the deployment carries it too), desired-replicas and
// max-replicas annotations, and the deployment's own annotations.
//
// A reconcile of one deployment (level-based, from the informer caches):
//
//   - being deleted: only the status is written;
//   - paused, or resized (an active ReplicaSet's desired-replicas differs
//     from spec.replicas): the ReplicaSets are scaled — the only active one
//     to the full size, or proportionally to their sizes during a rolling
//     update — and no rollout step is taken; paused ones are cleaned up;
//   - RollingUpdate: the new ReplicaSet is created if missing and grown
//     while all pods stay within replicas+maxSurge; else old ReplicaSets
//     shrink, first by their unavailable pods, then while the available
//     pods stay at least replicas-maxUnavailable (availability counts
//     minReadySeconds, through the ReplicaSets' availableReplicas);
//   - Recreate: old ReplicaSets go to 0, and once none of their pods runs
//     the new one is created at full size.
//
// A rollback (`kubectl rollout undo` patches the template back from an old
// ReplicaSet) needs nothing special: that ReplicaSet becomes the new one and
// its revision is raised, the one it had recorded in
// deployment.kubernetes.io/revision-history. Once a rollout completes, old
// ReplicaSets with no pods beyond revisionHistoryLimit are deleted, oldest
// revision first.
//
// Status is upstream's: replicas, updatedReplicas, readyReplicas,
// availableReplicas, unavailableReplicas, terminatingReplicas,
// observedGeneration, collisionCount, and conditions Available
// (MinimumReplicasAvailable/MinimumReplicasUnavailable), Progressing
// (NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated,
// NewReplicaSetAvailable, ProgressDeadlineExceeded, DeploymentPaused,
// DeploymentResumed, ReplicaSetCreateError) and ReplicaFailure (copied from
// a ReplicaSet), with upstream's messages — what `kubectl rollout status`
// reads. A deployment that makes no progress is looked at again when its
// progressDeadlineSeconds would pass. Events: ScalingReplicaSet ("Scaled up
// replica set web-5d4b7c8d9f from 0 to 3"), ReplicaSetCreateError,
// SelectingAll.
//
// The controller has the one shape of internal/controller: observe (the
// deployment, its namespace's ReplicaSets and, for Recreate, its pods from
// the caches → State), plan (plan.go: plan(State) Plan, pure: claims,
// ReplicaSet creates, scales and deletes in order, events, the status and
// when to look again; table-tested with simulated rollouts in
// plan_test.go), apply (apply.go: writes the Plan). The arithmetic (hash,
// fenceposts, scale-up and scale-down amounts, proportions, status and
// conditions, orderings) is in util.go and progress.go.
package deployment
