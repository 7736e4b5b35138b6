package server

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/deployment"
	"plainkube.dev/plainkube/internal/reconcile"
)

// TestControllerPanicIsRecovered injects a panic into the deployment
// controller for one Deployment: the server keeps serving, the controller
// goes on with another Deployment, the panic is counted in /metrics, and
// the Deployment that panicked is retried until (the fault gone) it gets
// its ReplicaSet.
func TestControllerPanicIsRecovered(t *testing.T) {
	var panics atomic.Int32
	reconcile.SetTestHook(func(loop string, key any) {
		if loop == deployment.Name && key == "default/boom" && panics.Load() < 3 {
			panics.Add(1)
			panic("injected fault")
		}
	})
	t.Cleanup(func() { reconcile.SetTestHook(nil) })
	counted := reconcile.Panics.WithLabelValues(deployment.Name)
	before := testutil.ToFloat64(counted)
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	for _, name := range []string{"boom", "web"} {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	replicaSetOf := func(name string) bool {
		list, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		return err == nil && len(list.Items) == 1
	}
	deadline := time.Now().Add(30 * time.Second)
	for !replicaSetOf("web") || panics.Load() < 3 || !replicaSetOf("boom") {
		if time.Now().After(deadline) {
			t.Fatalf("web has a ReplicaSet: %v; boom: %v after %d panics", replicaSetOf("web"), replicaSetOf("boom"), panics.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, _, body := raw(t, cfg, "GET", "/metrics", "", "", "")
	if code != 200 || !strings.Contains(body, `plainkube_recovered_panics_total{loop="deployment"}`) || testutil.ToFloat64(counted)-before != 3 {
		t.Errorf("/metrics: %d, no count of the 3 panics:\n%s", code, grepLines(body, "panics"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
