// Package podtopologyspread is the PodTopologySpread plugin. Its filter
// enforces the pod's DoNotSchedule topology spread constraints: placing
// the pod in a domain may not make that domain's count of matching pods
// exceed the global minimum by more than maxSkew (the minimum is 0 while
// fewer than minDomains domains exist), nodeAffinityPolicy and
// nodeTaintsPolicy decide which nodes count. Its score prefers, for
// ScheduleAnyway constraints, domains with fewer matching pods. Pods
// without constraints get upstream's system defaults (hostname maxSkew 3,
// zone maxSkew 5, ScheduleAnyway) over the pods of the same Service,
// ReplicaSet, StatefulSet or ReplicationController, when the snapshot
// knows those (Snapshot.Workloads).
package podtopologyspread
