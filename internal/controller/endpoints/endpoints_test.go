package endpoints

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

func startController(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg := controllertest.StartServer(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)
	return controllertest.Clientset(t, cfg)
}

func runPod(t *testing.T, cs kubernetes.Interface, ns, name, ip string, isReady bool) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "nginx",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
	}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.PodIP = ip
	created.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	status := corev1.ConditionFalse
	if isReady {
		status = corev1.ConditionTrue
	}
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitSubsets(t *testing.T, cs kubernetes.Interface, ns, name string, want ...string) *corev1.Endpoints {
	t.Helper()
	var got []string
	var ep *corev1.Endpoints
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		ep, err = cs.CoreV1().Endpoints(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			got = []string{err.Error()}
			return false, nil
		}
		got = render(ep.Subsets)
		return slices.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("endpoints %s/%s: got %q, want %q", ns, name, got, want)
	}
	return ep
}

func TestEndpointsFollowPods(t *testing.T) {
	cs := startController(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "blue"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	if _, err := cs.CoreV1().Services("app").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSubsets(t, cs, "app", "web")

	runPod(t, cs, "app", "a", "10.244.0.1", true)
	runPod(t, cs, "app", "b", "10.244.0.2", false)
	ep := waitSubsets(t, cs, "app", "web", "10.244.0.1 | 10.244.0.2 | http=8080")
	if ep.Labels["team"] != "blue" || ep.Annotations[corev1.EndpointsLastChangeTriggerTime] == "" {
		t.Errorf("metadata %+v", ep.ObjectMeta)
	}
	if a := ep.Subsets[0].Addresses[0]; a.TargetRef == nil || a.TargetRef.Name != "a" || a.NodeName == nil || *a.NodeName != "node-a" {
		t.Errorf("address %+v", a)
	}

	// A terminating pod leaves; an Endpoints deleted by hand comes back.
	if err := cs.CoreV1().Pods("app").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSubsets(t, cs, "app", "web", "10.244.0.1 |  | http=8080")
	if err := cs.CoreV1().Endpoints("app").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSubsets(t, cs, "app", "web", "10.244.0.1 |  | http=8080")

	// Deleting the Service removes its Endpoints.
	if err := cs.CoreV1().Services("app").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Endpoints("app").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal("endpoints of a deleted service remain")
	}

	// The API server's own "kubernetes" Endpoints (no selector) is left alone.
	k, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || len(k.Subsets) == 0 || len(k.Subsets[0].Addresses) == 0 {
		t.Errorf("kubernetes endpoints: %+v, %v", k, err)
	}
}
