package server

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodResizeSubresource: pods/resize changes a container's cpu and
// memory (and bumps generation) and nothing else; a plain pod update may
// not change resources; a resize that would change the QoS class, or
// remove a limit, is refused with upstream's messages and stores nothing.
func TestPodResizeSubresource(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	res := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "busybox",
		Resources: corev1.ResourceRequirements{Requests: res("100m", "32Mi"), Limits: res("200m", "64Mi")},
	}}}}
	pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// A plain update may not touch resources.
	plain := pod.DeepCopy()
	plain.Spec.Containers[0].Resources.Limits = res("300m", "64Mi")
	if _, err := pods.Update(ctx, plain, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields other than") {
		t.Errorf("plain update of resources: %v, want 422", err)
	}

	got, err := pods.Get(ctx, "r", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// GET of the subresource answers the pod.
	if sub, err := cs.CoreV1().RESTClient().Get().Namespace("default").Resource("pods").Name("r").SubResource("resize").Do(ctx).Get(); err != nil || sub.(*corev1.Pod).Name != "r" {
		t.Errorf("GET pods/resize: %v %v", sub, err)
	}

	want := got.DeepCopy()
	want.Spec.Containers[0].Resources.Limits = res("400m", "128Mi")
	want.Spec.Containers[0].Image = "nginx" // dropped: only resources change
	want.Labels = map[string]string{"dropped": "yes"}
	resized, err := pods.UpdateResize(ctx, "r", want, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := resized.Spec.Containers[0].Resources.Limits; l.Cpu().String() != "400m" || l.Memory().String() != "128Mi" {
		t.Errorf("limits after resize: %v", l)
	}
	if resized.Spec.Containers[0].Image != "busybox" || resized.Labels["dropped"] != "" {
		t.Errorf("resize changed more than resources: image %q labels %v", resized.Spec.Containers[0].Image, resized.Labels)
	}
	if resized.Generation != got.Generation+1 {
		t.Errorf("generation %d after resize, want %d", resized.Generation, got.Generation+1)
	}

	// A strategic merge patch, as `kubectl patch --subresource resize` sends.
	patch := `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"150m"}}}]}}`
	patched, err := pods.Patch(ctx, "r", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	if r := patched.Spec.Containers[0].Resources.Requests.Cpu().String(); r != "150m" {
		t.Errorf("cpu request after patch: %s", r)
	}

	for _, tc := range []struct{ patch, want string }{
		{`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"400m","memory":"128Mi"}}}]}}`,
			"Pod QOS Class may not change as a result of resizing"},
		{`{"spec":{"containers":[{"name":"c","resources":{"limits":{"memory":null}}}]}}`,
			"spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"},
	} {
		_, err := pods.Patch(ctx, "r", types.StrategicMergePatchType, []byte(tc.patch), metav1.PatchOptions{}, "resize")
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("patch %s: %v, want 422 %q", tc.patch, err, tc.want)
		}
	}
	if after, err := pods.Get(ctx, "r", metav1.GetOptions{}); err != nil || after.ResourceVersion != patched.ResourceVersion {
		t.Errorf("a refused resize changed the pod: %v", err)
	}
}
