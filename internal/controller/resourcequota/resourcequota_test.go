package resourcequota

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/api/quota"
	"plainkube.dev/plainkube/internal/controller/controllertest"
)

// TestRecount: against a real API server, a new quota gets its status,
// and deleting objects gives back what they used.
func TestRecount(t *testing.T) {
	cfg := controllertest.StartServer(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)
	cs := controllertest.Clientset(t, cfg)
	ctx := context.Background()
	for i := range 3 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{
		Hard: corev1.ResourceList{"pods": resourceOf("10"), "count/configmaps": resourceOf("5"), "count/deployments.apps": resourceOf("1")}}}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	usedIs := func(what string, want corev1.ResourceList) {
		t.Helper()
		controllertest.Eventually(t, what, func() (bool, error) {
			got, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return quota.Equal(got.Status.Hard, q.Spec.Hard) && quota.Equal(got.Status.Used, want), nil
		})
	}
	// kube-root-ca.crt is not there: no controller publishes it here.
	usedIs("the first count", corev1.ResourceList{"pods": resourceOf("3"), "count/configmaps": resourceOf("1"), "count/deployments.apps": resourceOf("0")})
	if err := cs.CoreV1().Pods("default").Delete(ctx, "p0", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	usedIs("usage given back", corev1.ResourceList{"pods": resourceOf("2"), "count/configmaps": resourceOf("0"), "count/deployments.apps": resourceOf("0")})
	p1, err := cs.CoreV1().Pods("default").Get(ctx, "p1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p1.Status.Phase = corev1.PodSucceeded
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, p1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	usedIs("a finished pod no longer counts", corev1.ResourceList{"pods": resourceOf("1"), "count/configmaps": resourceOf("0"), "count/deployments.apps": resourceOf("0")})
}

// TestDeleteOfMetadataCountedObject: an object counted only under
// count/<resource>.<group> (not one of the kinds the controller watches
// from the start) gives its unit back as soon as it is deleted, not at the
// five-minute recount.
func TestDeleteOfMetadataCountedObject(t *testing.T) {
	cfg := controllertest.StartServer(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)
	cs := controllertest.Clientset(t, cfg)
	ctx := context.Background()
	sa := func(name string) *corev1.ServiceAccount {
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	for _, name := range []string{"a", "b"} {
		if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, sa(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	hard := corev1.ResourceList{"count/serviceaccounts": resourceOf("10")}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	usedIs := func(what, n string) {
		t.Helper()
		controllertest.Eventually(t, what, func() (bool, error) {
			got, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return quota.Equal(got.Status.Used, corev1.ResourceList{"count/serviceaccounts": resourceOf(n)}), nil
		})
	}
	usedIs("the first count", "2")
	if err := cs.CoreV1().ServiceAccounts("default").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	usedIs("the unit of a deleted service account given back", "1")
	if err := cs.CoreV1().ServiceAccounts("default").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	usedIs("the unit of the other given back", "0")
}
