// Package priority is upstream's Priority admission plugin. A pod being
// created gets spec.priority (and spec.preemptionPolicy) from its
// priorityClassName, or from the globalDefault PriorityClass (whose name
// it then gets too), or 0 when there is none; a class that does not exist
// is refused (403 "no PriorityClass with name x was found"), and so is a
// pod that sets a priority or preemption policy other than its class's.
// An update keeps the priority the pod was given. Only one PriorityClass
// may be globalDefault, and the built-in classes (system-node-critical,
// system-cluster-critical, created by the server at start) may not be
// deleted; the reserved "system-" prefix is checked by the resource's own
// validation (internal/registry/scheduling).
package priority
