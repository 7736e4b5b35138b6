package server

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestRuntimeClassAdmission: node.k8s.io/v1 RuntimeClasses are served and
// validated, and a pod naming one gets its overhead and scheduling, or is
// refused with upstream's message when the class does not exist.
func TestRuntimeClassAdmission(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()

	_, err := cs.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Handler: "Not_A_Label"}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("a RuntimeClass with an invalid handler: %v, want 422", err)
	}
	overhead := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "sandboxed"}, Handler: "kata", Overhead: &nodev1.Overhead{PodFixed: overhead},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "yes"}}}
	if rc, err = cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rc.Handler = "runc"
	if _, err := cs.NodeV1().RuntimeClasses().Update(ctx, rc, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("changing a RuntimeClass's handler: %v, want 422", err)
	}

	pod := simplePod("sandboxed")
	pod.Spec.RuntimeClassName = ptr.To("sandboxed")
	got, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Spec.Overhead[corev1.ResourceCPU]; q.Cmp(overhead[corev1.ResourceCPU]) != 0 || got.Spec.NodeSelector["sandbox"] != "yes" {
		t.Errorf("pod of a RuntimeClass: overhead %v, node selector %v", got.Spec.Overhead, got.Spec.NodeSelector)
	}

	pod = simplePod("lost")
	pod.Spec.RuntimeClassName = ptr.To("nope")
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if want := `pods "lost" is forbidden: pod rejected: RuntimeClass "nope" not found`; err == nil || err.Error() != want {
		t.Errorf("pod of a missing RuntimeClass: %v, want %q", err, want)
	}
}
