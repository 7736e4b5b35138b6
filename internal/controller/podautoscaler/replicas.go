package podautoscaler

import (
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/api/podutil"
)

// PodMetric is one pod's sample of a metric (a resource's usage in
// milli-units).
type PodMetric struct {
	Timestamp time.Time
	Window    time.Duration
	Value     int64
}

// PodMetrics are samples by pod name.
type PodMetrics map[string]PodMetric

// Tolerances are how far below (Down) and above (Up) 1 the usage ratio may
// be without a change of scale.
type Tolerances struct {
	Down, Up float64
}

func (t Tolerances) within(ratio float64) bool {
	return 1-t.Down <= ratio && ratio <= 1+t.Up
}

// String is upstream's form ("[down:10.0%, up:10.0%]").
func (t Tolerances) String() string {
	return fmt.Sprintf("[down:%.1f%%, up:%.1f%%]", t.Down*100, t.Up*100)
}

// Readiness is how samples of pods that are starting are judged (the
// controller manager's --horizontal-pod-autoscaler-cpu-initialization-period
// and --horizontal-pod-autoscaler-initial-readiness-delay).
type Readiness struct {
	CPUInitializationPeriod time.Duration
	InitialReadinessDelay   time.Duration
}

// DefaultReadiness is upstream's defaults: 5 minutes and 30 seconds.
var DefaultReadiness = Readiness{CPUInitializationPeriod: 5 * time.Minute, InitialReadinessDelay: 30 * time.Second}

// Pods is what a resource calculation reads: the target's pods (those its
// scale selector selects), their samples, and when it is.
type Pods struct {
	Pods      []*corev1.Pod
	Metrics   PodMetrics
	Now       time.Time
	Readiness Readiness
}

// errNoPods and the other calculation errors carry upstream's words.
var (
	errNoPods       = errors.New("no pods returned by selector while calculating replica count")
	errNoReadyPods  = errors.New("did not receive metrics for targeted pods (pods might be unready)")
	errNoMatchPods  = errors.New("no metrics returned matched known pods")
	errNoPodMetrics = errors.New("no metrics returned from resource metrics API")
)

// groups of the pods a calculation looks at.
type podGroups struct {
	ready                     int
	unready, missing, ignored map[string]bool
}

// groupPods sorts pods as upstream: deleted and failed pods are ignored;
// pending ones are unready; pods without a sample are missing; for CPU, a
// pod that is not ready, or whose sample may predate its readiness, is
// unready while it initializes, and after that only if it never became
// ready.
func groupPods(pods []*corev1.Pod, metrics PodMetrics, resource corev1.ResourceName, now time.Time, r Readiness) podGroups {
	g := podGroups{unready: map[string]bool{}, missing: map[string]bool{}, ignored: map[string]bool{}}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed {
			g.ignored[pod.Name] = true
			continue
		}
		if pod.Status.Phase == corev1.PodPending {
			g.unready[pod.Name] = true
			continue
		}
		metric, found := metrics[pod.Name]
		if !found {
			g.missing[pod.Name] = true
			continue
		}
		if resource == corev1.ResourceCPU && cpuUnready(pod, metric, now, r) {
			g.unready[pod.Name] = true
			continue
		}
		g.ready++
	}
	return g
}

func cpuUnready(pod *corev1.Pod, metric PodMetric, now time.Time, r Readiness) bool {
	cond := podutil.ReadyCondition(pod)
	if cond == nil || pod.Status.StartTime == nil {
		return true
	}
	start := pod.Status.StartTime.Time
	if start.Add(r.CPUInitializationPeriod).After(now) {
		return cond.Status == corev1.ConditionFalse || metric.Timestamp.Before(cond.LastTransitionTime.Add(metric.Window))
	}
	return cond.Status == corev1.ConditionFalse && start.Add(r.InitialReadinessDelay).After(cond.LastTransitionTime.Time)
}

// without is metrics less the named pods' samples (a copy).
func without(metrics PodMetrics, drop ...map[string]bool) PodMetrics {
	out := make(PodMetrics, len(metrics))
	for name, m := range metrics {
		skip := false
		for _, d := range drop {
			skip = skip || d[name]
		}
		if !skip {
			out[name] = m
		}
	}
	return out
}

// podRequests is each pod's request of resource, in milli-units: one
// container's if container is set; else the pod-level request if the pod
// sets one; else the sum over its containers and restartable init
// containers, each of which must request it.
func podRequests(pods []*corev1.Pod, container string, resource corev1.ResourceName) (map[string]int64, error) {
	requests := make(map[string]int64, len(pods))
	for _, pod := range pods {
		if container == "" && pod.Spec.Resources != nil {
			if q, ok := pod.Spec.Resources.Requests[resource]; ok {
				requests[pod.Name] = q.MilliValue()
				continue
			}
			if len(pod.Spec.Resources.Requests) > 0 {
				return nil, fmt.Errorf("missing pod-level request for %s in Pod %s", resource, pod.Name)
			}
		}
		r, err := containerRequests(pod, container, resource)
		if err != nil {
			return nil, err
		}
		requests[pod.Name] = r
	}
	return requests, nil
}

func containerRequests(pod *corev1.Pod, container string, resource corev1.ResourceName) (int64, error) {
	containers := pod.Spec.Containers
	for _, c := range pod.Spec.InitContainers {
		if podutil.IsSidecar(&c) {
			containers = append(containers[:len(containers):len(containers)], c)
		}
	}
	var total int64
	for _, c := range containers {
		if container != "" && c.Name != container {
			continue
		}
		q, ok := c.Resources.Requests[resource]
		if !ok {
			return 0, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, c.Name, pod.Name)
		}
		if container != "" {
			return q.MilliValue(), nil
		}
		total += q.MilliValue()
	}
	if container != "" {
		return 0, fmt.Errorf("container %s not found in Pod %s", container, pod.Name)
	}
	return total, nil
}

// utilizationRatio is the samples' total over the requests' total (of the
// pods that have both), as a percentage, over the target; and the average
// sample.
func utilizationRatio(metrics PodMetrics, requests map[string]int64, target int32) (ratio float64, utilization int32, average int64, err error) {
	var used, requested int64
	n := 0
	for name, m := range metrics {
		r, ok := requests[name]
		if !ok {
			continue
		}
		used += m.Value
		requested += r
		n++
	}
	if requested == 0 {
		return 0, 0, 0, errNoMatchPods
	}
	utilization = int32(used * 100 / requested)
	return float64(utilization) / float64(target), utilization, used / int64(n), nil
}

// usageRatio is the average sample over the target.
func usageRatio(metrics PodMetrics, target int64) (ratio float64, average int64) {
	var total int64
	for _, m := range metrics {
		total += m.Value
	}
	average = total / int64(len(metrics))
	return float64(average) / float64(target), average
}

// ResourceUtilization is the replica count that brings the pods' average
// utilization of resource (usage over request, in percent; one
// container's if container is set) to target, as upstream computes it:
// within the tolerances nothing changes; pods not yet ready count as
// using nothing when scaling up, pods without samples as using nothing
// when scaling up and their request (or the target, if above 100 %) when
// scaling down; a change of direction by that correction changes nothing.
// It also returns the current utilization and the average usage.
func ResourceUtilization(in Pods, current int32, target int32, resource corev1.ResourceName, container string, tol Tolerances) (replicas, utilization int32, average int64, err error) {
	g, metrics, err := readySamples(in, resource)
	if err != nil {
		return 0, 0, 0, err
	}
	requests, err := podRequests(in.Pods, container, resource)
	if err != nil {
		return 0, 0, 0, err
	}
	ratio, utilization, average, err := utilizationRatio(metrics, requests, target)
	if err != nil {
		return 0, 0, 0, err
	}
	fallback := int64(max(100, target))
	replicas, err = fromRatio(current, ratio, g, metrics, tol,
		func(name string) int64 { return requests[name] * fallback / 100 },
		func(m PodMetrics) (float64, error) {
			r, _, _, err := utilizationRatio(m, requests, target)
			return r, err
		})
	if err != nil {
		return 0, utilization, average, err
	}
	return replicas, utilization, average, nil
}

// AverageValue is the replica count that brings the pods' average sample
// to target (milli-units), with ResourceUtilization's handling of pods
// not ready or without samples (those without one count as using the
// target when scaling down). resource is "" for a metric other than a
// resource's (readiness is judged for CPU only). It also returns the
// average sample.
func AverageValue(in Pods, current int32, target int64, resource corev1.ResourceName, tol Tolerances) (replicas int32, average int64, err error) {
	g, metrics, err := readySamples(in, resource)
	if err != nil {
		return 0, 0, err
	}
	ratio, average := usageRatio(metrics, target)
	replicas, _ = fromRatio(current, ratio, g, metrics, tol,
		func(string) int64 { return target },
		func(m PodMetrics) (float64, error) {
			r, _ := usageRatio(m, target)
			return r, nil
		})
	return replicas, average, nil
}

// readySamples groups in's pods (groupPods) and keeps the samples of the
// pods neither ignored nor unready.
func readySamples(in Pods, resource corev1.ResourceName) (podGroups, PodMetrics, error) {
	if len(in.Pods) == 0 {
		return podGroups{}, nil, errNoPods
	}
	g := groupPods(in.Pods, in.Metrics, resource, in.Now, in.Readiness)
	metrics := without(in.Metrics, g.ignored, g.unready)
	if len(metrics) == 0 {
		return podGroups{}, nil, errNoReadyPods
	}
	return g, metrics, nil
}

// fromRatio is the replica count from ratio, the usage ratio of the
// ready pods' samples (metrics): if no pod lacks a sample and none is
// unready while scaling up, ratio times the ready pods; else the ratio
// again (ratioOf) with stand-in samples — for the pods without one, none
// when scaling up and scaleDownValue when scaling down; for the unready
// ones when scaling up, none — corrected. metrics gets the stand-ins.
func fromRatio(current int32, ratio float64, g podGroups, metrics PodMetrics, tol Tolerances,
	scaleDownValue func(name string) int64, ratioOf func(PodMetrics) (float64, error)) (int32, error) {
	scaleUpWithUnready := len(g.unready) > 0 && ratio > 1
	if !scaleUpWithUnready && len(g.missing) == 0 {
		if tol.within(ratio) {
			return current, nil
		}
		return ceil32(ratio * float64(g.ready)), nil
	}
	if len(g.missing) > 0 && ratio != 1 {
		for name := range g.missing {
			v := int64(0)
			if ratio < 1 {
				v = scaleDownValue(name)
			}
			metrics[name] = PodMetric{Value: v}
		}
	}
	if scaleUpWithUnready {
		for name := range g.unready {
			metrics[name] = PodMetric{}
		}
	}
	newRatio, err := ratioOf(metrics)
	if err != nil {
		return 0, err
	}
	return corrected(current, ratio, newRatio, len(metrics), tol), nil
}

// corrected is the replica count from the ratio recomputed with the
// stand-in samples: the current count if that is within the tolerances,
// or if the correction turned the direction of the change.
func corrected(current int32, ratio, newRatio float64, samples int, tol Tolerances) int32 {
	if tol.within(newRatio) || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1) {
		return current
	}
	n := ceil32(newRatio * float64(samples))
	if (newRatio < 1 && n > current) || (newRatio > 1 && n < current) {
		return current
	}
	return n
}

func ceil32(f float64) int32 {
	if f > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(math.Ceil(f))
}
