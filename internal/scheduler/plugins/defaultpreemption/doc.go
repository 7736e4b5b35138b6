// Package defaultpreemption is the DefaultPreemption PostFilter plugin:
// when a pod fits nowhere, it looks for a node where evicting pods of
// lower priority would make it fit, choosing the victims and the node as
// upstream does (fewest PodDisruptionBudget violations, then lowest
// highest victim priority, lowest priority sum, fewest victims, latest
// start). It decides only: it returns the nominated node, the victims and
// the nominations to clear, and the scheduler carries them out through the
// API. Pods with preemptionPolicy Never do not preempt, and a pod already
// nominated to a node where its victims are still terminating waits.
package defaultpreemption
