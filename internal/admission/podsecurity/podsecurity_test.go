package podsecurity

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
)

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func privilegedPod(ns string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}}
}

func start(t *testing.T, ex Exemptions, objs ...*corev1.Namespace) *Plugin {
	t.Helper()
	cs := fake.NewClientset(privilegedPod("plain"))
	for _, o := range objs {
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	p := New()
	if err := p.Start(f, cs, ex); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx.Done())
	deadline := time.Now().Add(5 * time.Second)
	for !p.HasSynced() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return p
}

func podCreate(pod *corev1.Pod, user string) *admission.Attributes {
	return &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Pod"),
		Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: pod.Namespace, Name: pod.Name, Object: pod,
		User: &auth.User{Name: user}}
}

func TestPodSecurity(t *testing.T) {
	p := start(t, Exemptions{Namespaces: []string{"exempt"}, Usernames: []string{"system:admin-bot"}},
		namespace("plain", nil),
		namespace("strict", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}),
		namespace("warned", map[string]string{"pod-security.kubernetes.io/warn": "baseline", "pod-security.kubernetes.io/audit": "baseline"}),
		namespace("exempt", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}),
	)
	ctx := context.Background()

	if err := p.Validate(ctx, podCreate(privilegedPod("plain"), "alice")); err != nil {
		t.Errorf("a namespace without labels is privileged: %v", err)
	}

	err := p.Validate(ctx, podCreate(privilegedPod("strict"), "alice"))
	if !apierrors.IsForbidden(err) || !strings.HasPrefix(err.Error(), `pods "x" is forbidden: violates PodSecurity "restricted:latest": privileged (container "app" must not set securityContext.privileged=true)`) {
		t.Errorf("restricted namespace: %v", err)
	}

	a := podCreate(privilegedPod("warned"), "alice")
	if err := p.Validate(ctx, a); err != nil {
		t.Errorf("warn only: %v", err)
	}
	if w := a.Warnings(); len(w) != 1 || w[0] != `would violate PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)` {
		t.Errorf("warnings %q", w)
	}
	if v := a.Annotations()["pod-security.kubernetes.io/audit-violations"]; !strings.Contains(v, `would violate PodSecurity "baseline:latest"`) {
		t.Errorf("audit annotations %v", a.Annotations())
	}

	if err := p.Validate(ctx, podCreate(privilegedPod("exempt"), "alice")); err != nil {
		t.Errorf("exempt namespace: %v", err)
	}
	if err := p.Validate(ctx, podCreate(privilegedPod("strict"), "system:admin-bot")); err != nil {
		t.Errorf("exempt user: %v", err)
	}

	// A Deployment whose pods would be refused gets a warning, not a refusal.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "strict"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: privilegedPod("strict").Spec}}}
	da := &admission.Attributes{Operation: admission.Create, Kind: appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Namespace: "strict", Name: "d", Object: d, User: &auth.User{Name: "alice"}}
	if err := p.Validate(ctx, da); err != nil {
		t.Errorf("deployment: %v", err)
	}
	if w := da.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0], `would violate PodSecurity "restricted:latest": privileged`) {
		t.Errorf("deployment warnings %q", w)
	}

	// Tightening a namespace's level warns about the pods already there.
	tightened := namespace("plain", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	ua := &admission.Attributes{Operation: admission.Update, Kind: corev1.SchemeGroupVersion.WithKind("Namespace"),
		Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: "plain", Namespace: "plain", Object: tightened,
		OldObject: namespace("plain", nil), User: &auth.User{Name: "alice"}}
	if err := p.Validate(ctx, ua); err != nil {
		t.Errorf("label change: %v", err)
	}
	if w := ua.Warnings(); len(w) != 2 || w[0] != `existing pods in namespace "plain" violate the new PodSecurity enforce level "baseline:latest"` || w[1] != "x: privileged" {
		t.Errorf("label change warnings %q", w)
	}

	// A namespace label that does not parse is refused.
	bad := namespace("new", map[string]string{"pod-security.kubernetes.io/enforce": "strictest"})
	na := &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Namespace"),
		Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: "new", Object: bad, User: &auth.User{Name: "alice"}}
	if err := p.Validate(ctx, na); !apierrors.IsInvalid(err) {
		t.Errorf("bad label: %v", err)
	}
}
