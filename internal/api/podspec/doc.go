// Package podspec holds the defaulting and validation rules for a core/v1
// PodSpec, shared by every resource that embeds one: pods, pod templates,
// replication controllers, and the apps and batch workloads.
//
// Defaulting follows upstream's split: DefaultPodSpec and
// DefaultPodTemplateSpec apply what any embedded PodSpec gets (restart and
// DNS policy, grace period, scheduler, container, probe and volume
// defaults); DefaultPod adds what only Pod objects get (requests from
// limits, enableServiceLinks, host ports under hostNetwork).
//
// Validation mirrors upstream's field paths and messages, so clients that
// show or parse them see what they expect: ValidatePodSpec and
// ValidatePodTemplateSpec for templates; ValidatePod, ValidatePodCreate and
// ValidatePodUpdate (with ValidatePodSpecUpdate, the "pod updates may not
// change fields other than …" rule) for pods; and
// ValidatePodEphemeralContainersUpdate for the ephemeralcontainers
// subresource. ComputePodQOS gives a pod's QoS class. A few building blocks
// (resource names and quantities, tolerations, node selectors, claim specs,
// volume sources) are exported for the core resources that share them.
//
// Everything here is pure: functions of their arguments, no I/O.
package podspec
