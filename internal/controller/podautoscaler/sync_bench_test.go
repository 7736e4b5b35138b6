package podautoscaler_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/api/metricsapi"
	"plainkube.dev/plainkube/internal/controller/podautoscaler"
	"plainkube.dev/plainkube/pkg/testenv"
)

// BenchmarkSync is one whole sync against a real API server (in the same
// process, so its share of the work counts too): the target's /scale,
// the PodMetrics of its 10 pods on simulated nodes, the plan, and no
// write (the status is already up to date, as in a steady state). At the
// sync period of 15 s, 1,000 HPAs cost 1,000 × cpu-ns/op / 15 s of a core
// (reported as %core-per-1000-HPAs).
func BenchmarkSync(b *testing.B) {
	env := testenv.Start(b, testenv.WithScheduler(), testenv.WithSimNodes(2))
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	labels := map[string]string{"app": "web"}
	// A ReplicaSet's /scale without its controller: the pods are made here.
	if _, err := cs.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](10), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Labels: labels,
				Annotations: map[string]string{metricsapi.AnnotationCPUUsage: "50m"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 20,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	c, err := podautoscaler.New(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	// The controller's clock moves a sync period at each sync, so that it
	// keeps the history of a steady state (5 minutes of recommendations).
	clk := clocktesting.NewFakeClock(time.Now())
	sync, settled, err := podautoscaler.NewSyncer(ctx, c, clk)
	if err != nil {
		b.Fatal(err)
	}
	// Until the pods run and the status is written, syncs change things.
	deadline := time.Now().Add(60 * time.Second)
	for !settled("default/web", 10) {
		if time.Now().After(deadline) {
			b.Fatal("the HPA did not settle")
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.ReportAllocs()
	b.ResetTimer()
	before := processCPU()
	n := 0
	for b.Loop() {
		clk.Step(podautoscaler.DefaultSyncPeriod)
		if err := sync("default/web"); err != nil {
			b.Fatal(err)
		}
		n++
	}
	// CPU (of the whole process: client, API server, simulated nodes)
	// rather than wall time, which a busy machine stretches.
	perSync := (processCPU() - before) / time.Duration(n)
	b.ReportMetric(float64(perSync.Nanoseconds()), "cpu-ns/op")
	b.ReportMetric(100*1000*perSync.Seconds()/podautoscaler.DefaultSyncPeriod.Seconds(), "%core-per-1000-HPAs")
}

// processCPU is the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
