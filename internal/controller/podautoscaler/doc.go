// Package podautoscaler is the HorizontalPodAutoscaler controller
// (upstream's horizontal-pod-autoscaler-controller, autoscaling/v2).
//
// Every sync period (15 s) each HPA is synced on the controller shape:
// observe reads, through the API server, the target's /scale subresource
// (any kind: the kind's resource comes from discovery, so Deployments,
// ReplicaSets, StatefulSets and custom resources with a scale subresource
// all work), the pods its selector selects (from the shared informer) and
// their metrics.k8s.io PodMetrics; PlanSync, pure, computes upstream's
// replica count for each metric (ResourceUtilization, AverageValue: the
// tolerance, unready pods and pods without samples), bounds it by the
// stabilization windows, scaling policies and min/max (normalize, with
// the History the controller keeps in memory per HPA), and makes the
// status, conditions and events; apply writes the new scale and the
// status. Resource and ContainerResource metrics are read; Pods, Object
// and External metrics answer ScalingActive=False with the reason the
// custom or external metrics API cannot be read.
package podautoscaler
