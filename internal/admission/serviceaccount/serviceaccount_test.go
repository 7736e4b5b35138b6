package serviceaccount

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// lateAccounts finds service accounts only from the appearAt-th lookup on.
type lateAccounts struct {
	appearAt, lookups int
	names             map[string]bool
}

func (l *lateAccounts) Get(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	l.lookups++
	if l.lookups < l.appearAt || !l.names[name] {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, nil
}

func podCreate(pod *corev1.Pod) *admission.Attributes {
	return &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"),
		Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: pod.Namespace, Name: pod.Name, Object: pod}
}

func newPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{
		Containers:          []corev1.Container{{Name: "c"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e"}}},
	}}
}

func TestDefaultAccountIsWaitedFor(t *testing.T) {
	objs := &lateAccounts{appearAt: 4, names: map[string]bool{"default": true, "app": true}}
	var slept time.Duration
	p := &Plugin{Objects: objs, sleep: func(d time.Duration) { slept += d }}
	pod := newPod()
	if err := p.Mutate(context.Background(), podCreate(pod)); err != nil {
		t.Fatalf("default account found on the 4th lookup: %v", err)
	}
	if objs.lookups != 4 || slept < 300*time.Millisecond || slept >= 600*time.Millisecond {
		t.Errorf("%d lookups, slept %v", objs.lookups, slept)
	}
	if len(pod.Spec.EphemeralContainers[0].VolumeMounts) != 0 || len(pod.Spec.Containers[0].VolumeMounts) != 1 {
		t.Errorf("mounts: container %+v, ephemeral %+v", pod.Spec.Containers[0].VolumeMounts, pod.Spec.EphemeralContainers[0].VolumeMounts)
	}

	// Another account is looked up once.
	objs = &lateAccounts{appearAt: 2, names: map[string]bool{"app": true}}
	p.Objects = objs
	pod = newPod()
	pod.Spec.ServiceAccountName = "app"
	err := p.Mutate(context.Background(), podCreate(pod))
	if !apierrors.IsForbidden(err) || objs.lookups != 1 || !strings.HasSuffix(err.Error(), `error looking up service account ns/app: serviceaccount "app" not found`) {
		t.Errorf("after %d lookups: %v", objs.lookups, err)
	}
	// The default account that never comes: ten lookups, then Forbidden.
	objs = &lateAccounts{appearAt: 100, names: map[string]bool{"default": true}}
	p.Objects = objs
	if err := p.Mutate(context.Background(), podCreate(newPod())); !apierrors.IsForbidden(err) || objs.lookups != 10 {
		t.Errorf("after %d lookups: %v", objs.lookups, err)
	}
}
