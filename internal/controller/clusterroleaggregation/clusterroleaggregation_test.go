package clusterroleaggregation

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

// TestAggregation: against a real API server, an aggregated role follows
// its sources as they are created, changed and deleted.
func TestAggregation(t *testing.T) {
	cfg := controllertest.StartServer(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 1)
	cs := controllertest.Clientset(t, cfg)
	ctx := context.Background()
	roles := cs.RbacV1().ClusterRoles()
	if _, err := roles.Create(ctx, aggregated("agg-view", nil, toView), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesAre := func(what string, want ...rbacv1.PolicyRule) {
		t.Helper()
		controllertest.Eventually(t, what, func() (bool, error) {
			r, err := roles.Get(ctx, "agg-view", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return len(r.Rules) == len(want) && (len(want) == 0 || equality.Semantic.DeepEqual(r.Rules, want)), nil
		})
	}
	if _, err := roles.Create(ctx, role("src-pods", toView, readPods), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesAre("the source's rules", readPods)
	src, err := roles.Get(ctx, "src-pods", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src.Rules = append(src.Rules, readWidgets)
	if _, err := roles.Update(ctx, src, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesAre("the source's new rule", readPods, readWidgets)
	if err := roles.Delete(ctx, "src-pods", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesAre("no rules once the source is gone")
}
