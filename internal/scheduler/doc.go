// Package scheduler is plainkube's scheduler: it watches for pods that
// have no node yet and whose spec.schedulerName names one of its profiles
// (default-scheduler), picks a node for each, and binds the pod there
// through the pods/binding subresource. It only decides; it starts
// nothing. When a pod fits nowhere it says why, in upstream's words, in
// the pod's PodScheduled=False condition and a FailedScheduling event, and
// it may preempt lower-priority pods to make room.
//
// Like every plainkube component it talks only to the API server, through
// client-go: informers on nodes, pods, PriorityClasses,
// PodDisruptionBudgets, namespaces, PersistentVolumeClaims,
// PersistentVolumes, StorageClasses and the workload objects used for
// default spreading; writes are bindings, pod status updates, victim
// deletions, events, and (VolumeBinding) volumes' claimRefs and claims'
// selected-node annotations.
//
// Shape (upstream kube-scheduler's, reduced):
//
//   - queue: pending pods by priority, with backoff and an unschedulable
//     set that cluster events drain (package queue);
//   - cache: nodes and their pods, including pods assumed bound before the
//     watch confirms them, copied into a Snapshot per cycle (package cache);
//   - Algorithm: the pure core of a cycle — PreFilter, Filter (round-robin
//     over an adaptive share of the nodes), PostFilter (preemption),
//     PreScore, Score, select — over one snapshot (core.go);
//   - plugins: one package each under plugins/, run by the framework
//     (package framework), configured per profile (package config).
//
// The driver (Scheduler) is thin: informer handlers feed the cache and
// the queue; Run pops one pod at a time, runs the core on a fresh
// snapshot, assumes the pod on its node, runs the Reserve plugins, and
// binds it asynchronously after the PreBind plugins (which may wait for
// its volumes; a failure there undoes the reservation and requeues), or
// records the failure, carries out preemption and requeues the pod. With
// Options.LeaderElection set, only the holder of a coordination.k8s.io
// Lease in kube-system schedules.
package scheduler
