// Package daemonset is plainkube's DaemonSet controller: it keeps one pod of
// each DaemonSet on every node the DaemonSet's pod may run on, as upstream's
// daemonset-controller does.
//
// The controller talks only to the API server, through informers on
// DaemonSets, pods, nodes and ControllerRevisions and a workqueue of
// DaemonSet keys. A reconcile of one DaemonSet
//
//  1. makes sure a ControllerRevision holds its current pod template (named
//     <ds>-<hash>, labelled controller-revision-hash=<hash>), and deletes
//     revisions beyond spec.revisionHistoryLimit that no pod uses;
//  2. claims the pods its selector matches (adopt orphans, release
//     non-matching ones) and groups them by their target node (the node
//     they are bound to or pinned to by node affinity);
//  3. plans (plan.go: plan(State) Plan, pure, table-tested in
//     plan_test.go), node by node: whether the
//     daemon pod should run there (nodeSelector, required node affinity,
//     taints not tolerated — with the default DaemonSet tolerations added)
//     and so whether a pod is to be created or which pods are to be
//     deleted; then the rolling update (maxUnavailable / maxSurge) picks
//     which old pods to replace. OnDelete replaces nothing by itself;
//  4. creates pods pinned to their node with a required node affinity term
//     on metadata.name (the scheduler then binds them) and deletes pods,
//     recording SuccessfulCreate / SuccessfulDelete events;
//  5. writes the status (desired/current/misscheduled/ready/available/
//     updated numbers, observedGeneration) that kubectl rollout status reads.
//
// Creations and deletions are expected (controller.Expectations, as
// upstream's) until the pod informer's events show them, or for at most
// five minutes; until then a reconcile writes only the status, so one on a
// stale cache does not create a second pod for a node.
package daemonset
