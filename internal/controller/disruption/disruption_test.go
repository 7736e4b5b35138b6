package disruption

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

// TestBudgetStatus: against a real API server, a budget over the pods of
// a ReplicaSet (no ReplicaSet controller runs: the test makes the pods)
// gets its status from the ReplicaSet's scale and the pods' readiness, and
// follows them; a pod without a controller makes a percentage rule fail
// safe.
func TestBudgetStatus(t *testing.T) {
	cfg := controllertest.StartServer(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)
	cs := controllertest.Clientset(t, cfg)
	ctx := context.Background()
	sel := map[string]string{"app": "web"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](4),
		Selector: &metav1.LabelSelector{MatchLabels: sel},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}}}
	rs, err = cs.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Labels: sel,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Spec: rs.Spec.Template.Spec}
		setReady(t, cs, p, true)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: sel}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	statusIs := func(what string, expected, desired, healthy, allowed int32, reason string) {
		t.Helper()
		controllertest.Eventually(t, what, func() (bool, error) {
			got, err := cs.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			s := got.Status
			c := apimeta.FindStatusCondition(s.Conditions, policyv1.DisruptionAllowedCondition)
			if s.ObservedGeneration != got.Generation || s.ExpectedPods != expected || s.DesiredHealthy != desired ||
				s.CurrentHealthy != healthy || s.DisruptionsAllowed != allowed || c == nil || c.Reason != reason {
				return false, fmt.Errorf("status %+v", s)
			}
			return true, nil
		})
	}
	// Scale 4, maxUnavailable 1: 3 needed, 3 ready.
	statusIs("first status", 4, 3, 3, 0, policyv1.InsufficientPodsReason)
	rs.Spec.Replicas = ptr.To[int32](3)
	if _, err := cs.AppsV1().ReplicaSets("default").Update(ctx, rs, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	statusIs("scale 3", 3, 2, 3, 1, policyv1.SufficientPodsReason)
	p, err := cs.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p = setReady(t, cs, p, false)
	statusIs("a pod unready, scale 3", 3, 2, 2, 0, policyv1.InsufficientPodsReason)
	setReady(t, cs, p, true)
	statusIs("all ready", 3, 2, 3, 1, policyv1.SufficientPodsReason)

	lone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lone", Labels: sel}, Spec: rs.Spec.Template.Spec}
	setReady(t, cs, lone, true)
	// Unmanaged pods count nowhere in the scale but are healthy.
	statusIs("an unmanaged pod", 3, 2, 4, 2, policyv1.SufficientPodsReason)

	// A controller no finder knows: fail safe.
	if _, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "odd", Labels: sel,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "u", Controller: ptr.To(true)}}},
		Spec: rs.Spec.Template.Spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "SyncFailed", func() (bool, error) {
		got, err := cs.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := apimeta.FindStatusCondition(got.Status.Conditions, policyv1.DisruptionAllowedCondition)
		return got.Status.DisruptionsAllowed == 0 && c != nil && c.Reason == policyv1.SyncFailedReason &&
			c.Message == "configmaps does not implement the scale subresource", nil
	})
}

// setReady creates p in "default" if it has no UID, and sets it Running
// and ready or not.
func setReady(t *testing.T, cs kubernetes.Interface, p *corev1.Pod, ready bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var err error
	if p.UID == "" {
		if p, err = cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	p, err = cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
