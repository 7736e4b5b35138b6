package podautoscaler

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/api/metricsapi"
)

func cpuUtilization(target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)}}}
}

func testHPA(minReplicas, maxReplicas int32, metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Generation: 3},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To(minReplicas), MaxReplicas: maxReplicas, Metrics: metrics,
		},
	}
}

// podMetricsList is PodMetrics with one container "app" using the given
// millicores, for pods named p0, p1, ….
func podMetricsList(milli ...int64) []metricsapi.PodMetrics {
	var out []metricsapi.PodMetrics
	for i, m := range milli {
		out = append(out, metricsapi.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)},
			Timestamp: metav1.Time{Time: t0}, Window: metav1.Duration{Duration: 30 * time.Second},
			Containers: []metricsapi.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(m, resource.DecimalSI)}}}})
	}
	return out
}

func readyPods(n int) []*corev1.Pod {
	var tps []testPod
	for i := range n {
		tps = append(tps, testPod{name: fmt.Sprintf("p%d", i), cpu: "100m"})
	}
	return pods(tps...)
}

func stateOf(hpa *autoscalingv2.HorizontalPodAutoscaler, replicas int32, usage ...int64) State {
	return State{
		HPA: hpa, Now: t0, Settings: DefaultSettings,
		Scale:         &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}, Status: autoscalingv1.ScaleStatus{Replicas: replicas, Selector: "app=web"}},
		Pods:          readyPods(len(usage)),
		PodMetrics:    podMetricsList(usage...),
		SelectingHPAs: []string{"ns/web"},
	}
}

func conditionOf(s autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) string {
	for _, c := range s.Conditions {
		if c.Type == t {
			return string(c.Status) + "/" + c.Reason + ": " + c.Message
		}
	}
	return ""
}

func eventsOf(evs []Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Type+" "+e.Reason+" "+e.Message)
	}
	return strings.Join(s, "\n")
}

func TestPlanScaleUp(t *testing.T) {
	st := stateOf(testHPA(1, 10, cpuUtilization(50)), 2, 80, 80)
	plan := PlanSync(st)
	if !plan.Rescale || plan.Desired != 4 || plan.Reason != "cpu resource utilization (percentage of request) above target" || plan.Err != nil {
		t.Fatalf("plan = rescale %v to %d for %q, err %v", plan.Rescale, plan.Desired, plan.Reason, plan.Err)
	}
	status, events, hist := plan.Finish(st, nil)
	if got := eventsOf(events); got != "Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target" {
		t.Errorf("events:\n%s", got)
	}
	if status.CurrentReplicas != 2 || status.DesiredReplicas != 4 || status.LastScaleTime == nil || !status.LastScaleTime.Time.Equal(t0) ||
		status.ObservedGeneration == nil || *status.ObservedGeneration != 3 {
		t.Errorf("status = %+v", status)
	}
	m := status.CurrentMetrics[0].Resource
	if m.Name != corev1.ResourceCPU || *m.Current.AverageUtilization != 80 || m.Current.AverageValue.String() != "80m" {
		t.Errorf("current metric = %+v", m)
	}
	for typ, want := range map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
		autoscalingv2.AbleToScale:    "True/SucceededRescale: the HPA controller was able to update the target scale to 4",
		autoscalingv2.ScalingActive:  "True/ValidMetricFound: the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)",
		autoscalingv2.ScalingLimited: "False/DesiredWithinRange: the desired count is within the acceptable range",
		autoscalingv2.ScaledToZero:   "False/NotScaledToZero: the HPA controller did not scale the workload to zero",
	} {
		if got := conditionOf(status, typ); got != want {
			t.Errorf("%s = %q, want %q", typ, got, want)
		}
	}
	// the first sync records the current count, then the recommendation
	if len(hist.Recommendations) != 2 || hist.Recommendations[0].Replicas != 2 || hist.Recommendations[1].Replicas != 4 {
		t.Errorf("recommendations = %v", hist.Recommendations)
	}

	status, events, _ = plan.Finish(st, errors.New("conflict"))
	if got := eventsOf(events); !strings.Contains(got, "Warning FailedRescale New size: 4; reason: cpu resource utilization (percentage of request) above target; error: conflict") {
		t.Errorf("events:\n%s", got)
	}
	if got := conditionOf(status, autoscalingv2.AbleToScale); got != "False/FailedUpdateScale: the HPA controller was unable to update the target scale: conflict" {
		t.Errorf("AbleToScale = %q", got)
	}
	if status.LastScaleTime != nil {
		t.Errorf("a failed rescale set the last scale time")
	}
}

func TestPlanNoChange(t *testing.T) {
	plan := PlanSync(stateOf(testHPA(1, 10, cpuUtilization(50)), 2, 52, 48))
	if plan.Rescale || plan.Err != nil || plan.Status.DesiredReplicas != 2 || plan.Status.CurrentReplicas != 2 {
		t.Fatalf("plan = %+v", plan)
	}
	if got := conditionOf(plan.Status, autoscalingv2.AbleToScale); got != "True/ReadyForNewScale: recommended size matches current size" {
		t.Errorf("AbleToScale = %q", got)
	}
	if len(plan.Events) != 0 {
		t.Errorf("events: %v", plan.Events)
	}
}

func TestPlanOutsideMinMax(t *testing.T) {
	plan := PlanSync(stateOf(testHPA(1, 3, cpuUtilization(50)), 5))
	if !plan.Rescale || plan.Desired != 3 || plan.Reason != "Current number of replicas above Spec.MaxReplicas" {
		t.Errorf("above max: %+v", plan)
	}
	plan = PlanSync(stateOf(testHPA(2, 3, cpuUtilization(50)), 1))
	if !plan.Rescale || plan.Desired != 2 || plan.Reason != "Current number of replicas below Spec.MinReplicas" {
		t.Errorf("below min: %+v", plan)
	}
	plan = PlanSync(stateOf(testHPA(1, 3, cpuUtilization(50)), 0))
	if plan.Rescale || conditionOf(plan.Status, autoscalingv2.ScalingActive) != "False/ScalingDisabled: scaling is disabled since the replica count of the target is zero" {
		t.Errorf("at zero: %+v", plan)
	}
}

func TestPlanFailures(t *testing.T) {
	external := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue_length"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("10"))}}}
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))}}}
	cases := []struct {
		name       string
		st         State
		wantEvents []string
		wantCond   string // the condition that says why
		condType   autoscalingv2.HorizontalPodAutoscalerConditionType
	}{{
		name: "the scale cannot be had",
		st: func() State {
			s := stateOf(testHPA(1, 10, cpuUtilization(50)), 2)
			s.Scale, s.ScaleErr = nil, errors.New(`deployments.apps "web" not found`)
			return s
		}(),
		wantEvents: []string{`Warning FailedGetScale deployments.apps "web" not found`},
		condType:   autoscalingv2.AbleToScale,
		wantCond:   `False/FailedGetScale: the HPA controller was unable to get the target's current scale: deployments.apps "web" not found`,
	}, {
		name: "no metrics",
		st: func() State {
			s := stateOf(testHPA(1, 10, cpuUtilization(50)), 2, 10, 10)
			s.PodMetrics = nil
			return s
		}(),
		wantEvents: []string{
			"Warning FailedGetResourceMetric failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API",
			"Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API",
		},
		condType: autoscalingv2.ScalingActive,
		wantCond: "False/FailedGetResourceMetric: the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API",
	}, {
		name: "the selector is missing",
		st: func() State {
			s := stateOf(testHPA(1, 10, cpuUtilization(50)), 2, 10, 10)
			s.Scale.Status.Selector = ""
			return s
		}(),
		wantEvents: []string{"Warning SelectorRequired selector is required", "Warning FailedComputeMetricsReplicas selector is required"},
		condType:   autoscalingv2.ScalingActive,
		wantCond:   "False/InvalidSelector: the HPA target's scale is missing a selector",
	}, {
		name: "another HPA selects the pods",
		st: func() State {
			s := stateOf(testHPA(1, 10, cpuUtilization(50)), 2, 10, 10)
			s.SelectingHPAs = []string{"ns/other", "ns/web"}
			return s
		}(),
		wantEvents: []string{"Warning AmbiguousSelector pods by selector app=web are controlled by more than one HPA (e.g. [ns/other ns/web])"},
		condType:   autoscalingv2.ScalingActive,
		wantCond:   "False/AmbiguousSelector: pods by selector app=web are controlled by more than one HPA (e.g. [ns/other ns/web])",
	}, {
		name: "an external metric without the external metrics API",
		st: func() State {
			s := stateOf(testHPA(1, 10, external), 2, 10, 10)
			s.ExternalMetricsErr = errors.New("no external metrics API (external.metrics.k8s.io) registered")
			return s
		}(),
		wantEvents: []string{"Warning FailedGetExternalMetric unable to get external metric ns/queue_length/nil: unable to fetch metrics from external metrics API: no external metrics API (external.metrics.k8s.io) registered"},
		condType:   autoscalingv2.ScalingActive,
		wantCond:   "False/FailedGetExternalMetric: the HPA was unable to compute the replica count: unable to get external metric ns/queue_length/nil: unable to fetch metrics from external metrics API: no external metrics API (external.metrics.k8s.io) registered",
	}, {
		name: "a pods metric without the custom metrics API",
		st: func() State {
			s := stateOf(testHPA(1, 10, pods), 2, 10, 10)
			s.CustomMetricsErr = errors.New("no custom metrics API (custom.metrics.k8s.io) registered")
			return s
		}(),
		wantEvents: []string{"Warning FailedGetPodsMetric unable to get metric requests_per_second: unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"},
		condType:   autoscalingv2.ScalingActive,
		wantCond:   "False/FailedGetPodsMetric: the HPA was unable to compute the replica count: unable to get metric requests_per_second: unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := PlanSync(c.st)
			if plan.Rescale || plan.Err == nil {
				t.Errorf("rescale %v, err %v: want no rescale and an error", plan.Rescale, plan.Err)
			}
			got := eventsOf(plan.Events)
			for _, w := range c.wantEvents {
				if !strings.Contains(got, w) {
					t.Errorf("events lack %q:\n%s", w, got)
				}
			}
			if cond := conditionOf(plan.Status, c.condType); cond != c.wantCond {
				t.Errorf("%s = %q\nwant %q", c.condType, cond, c.wantCond)
			}
		})
	}
}

// TestPlanOneMetricFails: a failing metric does not stop a scale-up the
// others call for, but stops a scale-down.
func TestPlanOneMetricFails(t *testing.T) {
	external := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "q"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("10"))}}}
	st := stateOf(testHPA(1, 10, cpuUtilization(50), external), 2, 100, 100)
	st.ExternalMetricsErr = errors.New("no external metrics API (external.metrics.k8s.io) registered")
	plan := PlanSync(st)
	if !plan.Rescale || plan.Desired != 4 || plan.Err == nil {
		t.Errorf("up: rescale %v to %d, err %v; want 4 and the metric's error", plan.Rescale, plan.Desired, plan.Err)
	}
	st = stateOf(testHPA(1, 10, cpuUtilization(50), external), 2, 10, 10)
	st.ExternalMetricsErr = errors.New("no external metrics API (external.metrics.k8s.io) registered")
	if plan = PlanSync(st); plan.Rescale {
		t.Errorf("down: rescaled to %d with a metric failing", plan.Desired)
	}
}
