package podautoscaler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/api/metricsapi"
	"plainkube.dev/plainkube/internal/controller/controllertest"
	"plainkube.dev/plainkube/internal/controller/deployment"
	"plainkube.dev/plainkube/internal/controller/podautoscaler"
	"plainkube.dev/plainkube/internal/controller/replicaset"
	"plainkube.dev/plainkube/pkg/testenv"
)

// TestScalesSimulatedDeployment runs the HPA controller (sync period 1 s,
// upstream's other settings) with the Deployment and ReplicaSet
// controllers, the scheduler and simulated nodes: pods declaring 80 % of
// their CPU request against a 50 % target scale the Deployment up as
// upstream's algorithm does (1 → 2, pods not yet sampled since ready
// holding it, → 4 → 5, the maximum); once their usage falls to 10 %, it
// scales down to the minimum only after the scale-down stabilization
// window of the HPA's behavior.
func TestScalesSimulatedDeployment(t *testing.T) {
	env := testenv.Start(t, testenv.WithScheduler(), testenv.WithSimNodes(3))
	log := controllertest.LoggerAt(t, slog.LevelWarn)
	hc, err := podautoscaler.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	hc.SyncPeriod, hc.Logger = time.Second, log.With("controller", "hpa")
	dc, err := deployment.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	dc.Logger = log.With("controller", "deployment")
	rc, err := replicaset.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	rc.Logger = log.With("controller", "replicaset")
	controllertest.Run(t, dc, 2)
	controllertest.Run(t, rc, 2)
	controllertest.Run(t, hc, 2)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	ns := "default"

	labels := map[string]string{"app": "web"}
	_, err = cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{metricsapi.AnnotationCPUUsage: "80m"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const window = 4 // seconds of scale-down stabilization
	_, err = cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](window)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Scale-up, step by step.
	var sizes []int32
	controllertest.EventuallyWithin(t, 100*time.Millisecond, 60*time.Second, "the HPA scales web to 5", func() (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if r := *d.Spec.Replicas; len(sizes) == 0 || sizes[len(sizes)-1] != r {
			sizes = append(sizes, r)
		}
		return *d.Spec.Replicas == 5, nil
	})
	if fmt.Sprint(sizes) != "[1 2 4 5]" {
		t.Errorf("sizes on the way up = %v, want [1 2 4 5]", sizes)
	}
	wantEvents := []string{
		"New size: 2; reason: cpu resource utilization (percentage of request) above target",
		"New size: 4; reason: cpu resource utilization (percentage of request) above target",
		"New size: 5; reason: cpu resource utilization (percentage of request) above target",
	}
	controllertest.Eventually(t, "SuccessfulRescale events", func() (bool, error) {
		return hasEvents(ctx, cs, ns, "SuccessfulRescale", wantEvents)
	})
	controllertest.Eventually(t, "the HPA's status at 5 replicas", func() (bool, error) {
		h, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := h.Status
		if s.CurrentReplicas != 5 || s.DesiredReplicas != 5 || s.LastScaleTime == nil || len(s.CurrentMetrics) != 1 {
			return false, nil
		}
		m := s.CurrentMetrics[0].Resource
		if m == nil || m.Current.AverageUtilization == nil || *m.Current.AverageUtilization != 80 || m.Current.AverageValue.String() != "80m" {
			return false, nil
		}
		return condition(h, autoscalingv2.ScalingLimited) == "True/TooManyReplicas" &&
			condition(h, autoscalingv2.ScalingActive) == "True/ValidMetricFound", nil
	})

	// Usage falls to 10 %: down to 1, after the window.
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	lowered := time.Now()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{metricsapi.AnnotationCPUUsage: "10m"}}})
	for _, p := range pods.Items {
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var scaledDown time.Time
	controllertest.EventuallyWithin(t, 100*time.Millisecond, 30*time.Second, "the HPA scales web down to 1", func() (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if *d.Spec.Replicas < 5 && scaledDown.IsZero() {
			scaledDown = time.Now()
			if *d.Spec.Replicas != 1 {
				return false, fmt.Errorf("scaled down to %d, want 1 at once", *d.Spec.Replicas)
			}
		}
		return *d.Spec.Replicas == 1, nil
	})
	if waited := scaledDown.Sub(lowered); waited < (window-1)*time.Second {
		t.Errorf("scaled down %v after usage fell, before the %ds stabilization window", waited, window)
	}
	controllertest.Eventually(t, "the scale-down event", func() (bool, error) {
		return hasEvents(ctx, cs, ns, "SuccessfulRescale", []string{"New size: 1; reason: All metrics below target"})
	})
}

func hasEvents(ctx context.Context, cs kubernetes.Interface, ns, reason string, want []string) (bool, error) {
	evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		return false, err
	}
	var got []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "HorizontalPodAutoscaler" && e.Source.Component == podautoscaler.Component {
			got = append(got, e.Message)
		}
	}
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			return false, nil
		}
	}
	return true, nil
}

func condition(h *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) string {
	for _, c := range h.Status.Conditions {
		if c.Type == t {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return ""
}
