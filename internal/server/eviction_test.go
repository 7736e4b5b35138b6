package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// evictionFixture makes pods and budgets in a namespace of its own, with
// the statuses a node agent and the disruption controller would write.
type evictionFixture struct {
	t  *testing.T
	cs kubernetes.Interface
	ns string
}

// pod makes a pod labelled app=web in phase (Running pods ready or not);
// a finalizer keeps it after its deletion, so that what the eviction wrote
// can be read.
func (f evictionFixture) pod(name string, phase corev1.PodPhase, ready bool) *corev1.Pod {
	f.t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}, Finalizers: []string{"example.com/keep"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
	p, err := f.cs.CoreV1().Pods(f.ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		_, _ = f.cs.CoreV1().Pods(f.ns).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	p.Status.Phase = phase
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if p, err = f.cs.CoreV1().Pods(f.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// budget makes a budget over app=web whose status says what the
// disruption controller would (observedGeneration current unless stale).
func (f evictionFixture) budget(name string, healthy, desired, allowed int32, mutate ...func(*policyv1.PodDisruptionBudget)) {
	f.t.Helper()
	ctx := context.Background()
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr.To(intstr.FromInt32(desired)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	pdb, err := f.cs.PolicyV1().PodDisruptionBudgets(f.ns).Create(ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: healthy, DesiredHealthy: desired,
		ExpectedPods: healthy, DisruptionsAllowed: allowed}
	for _, m := range mutate {
		m(pdb)
	}
	if _, err := f.cs.PolicyV1().PodDisruptionBudgets(f.ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// evict posts an Eviction once: client-go would retry a 429 that carries
// a Retry-After (10s for a budget behind its spec) ten times.
func (f evictionFixture) evict(name string, opts *metav1.DeleteOptions) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, DeleteOptions: opts}
	return f.cs.CoreV1().RESTClient().Post().AbsPath("/api/v1").Namespace(f.ns).Resource("pods").Name(name).SubResource("eviction").
		MaxRetries(0).Body(ev).Do(context.Background()).Error()
}

// evicted reports whether the pod is being deleted, and its
// DisruptionTarget condition.
func (f evictionFixture) evicted(name string) (bool, *corev1.PodCondition) {
	f.t.Helper()
	p, err := f.cs.CoreV1().Pods(f.ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
			return p.DeletionTimestamp != nil, &p.Status.Conditions[i]
		}
	}
	return p.DeletionTimestamp != nil, nil
}

func (f evictionFixture) pdb(name string) *policyv1.PodDisruptionBudget {
	f.t.Helper()
	pdb, err := f.cs.PolicyV1().PodDisruptionBudgets(f.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return pdb
}

// budgetCause is the DisruptionBudget cause's message of a refusal.
func budgetCause(err error) string {
	var se apierrors.APIStatus
	if !apierrors.IsTooManyRequests(err) && !apierrors.IsForbidden(err) {
		return ""
	}
	se = err.(apierrors.APIStatus)
	if d := se.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == policyv1.DisruptionBudgetCause {
				return c.Message
			}
		}
	}
	return ""
}

// TestEvictionHonoursDisruptionBudgets: on etcd, without controllers (the
// budgets' statuses are written by the test), pods/eviction answers as
// upstream's for each case of a pod and its budgets.
func TestEvictionHonoursDisruptionBudgets(t *testing.T) {
	_, cfg := startServerWith(t, Options{})
	cs := clientset(t, cfg)
	n := 0
	fixture := func(t *testing.T) evictionFixture {
		n++
		ns := fmt.Sprintf("evict-%d", n)
		namespaceFor(t, cs, ns, nil)
		return evictionFixture{t: t, cs: cs, ns: ns}
	}

	t.Run("a missing pod is 404", func(t *testing.T) {
		f := fixture(t)
		if err := f.evict("nope", nil); !apierrors.IsNotFound(err) {
			t.Fatalf("got %v, want NotFound", err)
		}
	})

	t.Run("no budget: the pod is marked and deleted", func(t *testing.T) {
		f := fixture(t)
		f.pod("p", corev1.PodRunning, true)
		if err := f.evict("p", nil); err != nil {
			t.Fatal(err)
		}
		deleting, c := f.evicted("p")
		if !deleting || c == nil || c.Status != corev1.ConditionTrue || c.Reason != "EvictionByEvictionAPI" || c.Message != "Eviction API: evicting" {
			t.Fatalf("deleting %v, DisruptionTarget %+v", deleting, c)
		}
	})

	t.Run("a budget that allows none: 429 with upstream's messages, nothing changes", func(t *testing.T) {
		f := fixture(t)
		f.pod("p", corev1.PodRunning, true)
		f.budget("pdb", 2, 2, 0)
		err := f.evict("p", nil)
		if !apierrors.IsTooManyRequests(err) || err.Error() != "Cannot evict pod as it would violate the pod's disruption budget." {
			t.Fatalf("got %v, want 429", err)
		}
		if got := budgetCause(err); got != "The disruption budget pdb needs 2 healthy pods and has 2 currently" {
			t.Errorf("cause %q", got)
		}
		if deleting, c := f.evicted("p"); deleting || c != nil {
			t.Errorf("refused eviction changed the pod: deleting %v, condition %+v", deleting, c)
		}
	})

	t.Run("a budget that failed sync: its message in the cause", func(t *testing.T) {
		f := fixture(t)
		f.pod("p", corev1.PodRunning, true)
		f.budget("pdb", 3, 2, 0, func(p *policyv1.PodDisruptionBudget) {
			p.Status.Conditions = []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
				Reason: policyv1.SyncFailedReason, Message: "found no controllers for pod \"p\"", LastTransitionTime: metav1.Now()}}
		})
		err := f.evict("p", nil)
		if want := `The disruption budget pdb does not allow evicting pods currently because it failed sync: found no controllers for pod "p"`; budgetCause(err) != want {
			t.Fatalf("got %v (cause %q)", err, budgetCause(err))
		}
	})

	t.Run("a budget behind its spec: 429, still being processed", func(t *testing.T) {
		f := fixture(t)
		f.pod("p", corev1.PodRunning, true)
		f.budget("pdb", 3, 2, 1, func(p *policyv1.PodDisruptionBudget) { p.Status.ObservedGeneration = 0 })
		err := f.evict("p", nil)
		if !apierrors.IsTooManyRequests(err) || budgetCause(err) != "The disruption budget pdb is still being processed by the server." {
			t.Fatalf("got %v (cause %q)", err, budgetCause(err))
		}
	})

	t.Run("a budget that allows one: spent, the pod recorded and deleted", func(t *testing.T) {
		f := fixture(t)
		f.pod("p", corev1.PodRunning, true)
		f.pod("q", corev1.PodRunning, true)
		f.budget("pdb", 3, 2, 1)
		if err := f.evict("p", nil); err != nil {
			t.Fatal(err)
		}
		if deleting, c := f.evicted("p"); !deleting || c == nil {
			t.Errorf("p: deleting %v, DisruptionTarget %+v", deleting, c)
		}
		pdb := f.pdb("pdb")
		if _, ok := pdb.Status.DisruptedPods["p"]; pdb.Status.DisruptionsAllowed != 0 || !ok {
			t.Errorf("budget status %+v: want disruptionsAllowed 0 and p in disruptedPods", pdb.Status)
		}
		if c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); c == nil || c.Reason != policyv1.InsufficientPodsReason {
			t.Errorf("DisruptionAllowed %+v", c)
		}
		// The next is refused until the controller looks again.
		if err := f.evict("q", nil); !apierrors.IsTooManyRequests(err) {
			t.Errorf("second eviction: %v, want 429", err)
		}
	})

	t.Run("dry run: allowed, nothing written", func(t *testing.T) {
		f := fixture(t)
		f.pod("p", corev1.PodRunning, true)
		f.budget("pdb", 3, 2, 1)
		before := f.pdb("pdb").ResourceVersion
		if err := f.evict("p", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		if deleting, c := f.evicted("p"); deleting || c != nil {
			t.Errorf("dry run changed the pod: deleting %v, condition %+v", deleting, c)
		}
		if rv := f.pdb("pdb").ResourceVersion; rv != before {
			t.Errorf("dry run wrote the budget")
		}
	})

	t.Run("two budgets: 500", func(t *testing.T) {
		f := fixture(t)
		f.pod("p", corev1.PodRunning, true)
		f.budget("a", 3, 1, 2)
		f.budget("b", 3, 1, 2)
		err := f.evict("p", nil)
		if statusCode(err) != http.StatusInternalServerError || !strings.Contains(err.Error(), "more than one PodDisruptionBudget") {
			t.Fatalf("got %v (code %d), want 500", err, statusCode(err))
		}
		if deleting, _ := f.evicted("p"); deleting {
			t.Error("pod deleted")
		}
	})

	t.Run("pending and finished pods go without the budget", func(t *testing.T) {
		f := fixture(t)
		f.pod("pending", corev1.PodPending, false)
		f.pod("done", corev1.PodSucceeded, false)
		f.budget("pdb", 0, 2, 0)
		for _, name := range []string{"pending", "done"} {
			if err := f.evict(name, nil); err != nil {
				t.Errorf("%s: %v", name, err)
			} else if deleting, _ := f.evicted(name); !deleting {
				t.Errorf("%s not deleted", name)
			}
		}
	})

	t.Run("an unready pod: IfHealthyBudget while the budget is whole, else 429; AlwaysAllow always", func(t *testing.T) {
		f := fixture(t)
		f.pod("a", corev1.PodRunning, false)
		f.pod("b", corev1.PodRunning, false)
		f.budget("pdb", 2, 2, 0)
		if err := f.evict("a", nil); err != nil {
			t.Fatalf("healthy budget: %v", err)
		}
		if pdb := f.pdb("pdb"); len(pdb.Status.DisruptedPods) != 0 {
			t.Errorf("an unready pod spent the budget: %+v", pdb.Status)
		}
		g := fixture(t)
		g.pod("a", corev1.PodRunning, false)
		g.budget("pdb", 1, 2, 0)
		if err := g.evict("a", nil); !apierrors.IsTooManyRequests(err) {
			t.Fatalf("budget short of healthy pods: %v, want 429", err)
		}
		h := fixture(t)
		h.pod("a", corev1.PodRunning, false)
		h.budget("pdb", 1, 2, 0, func(p *policyv1.PodDisruptionBudget) {})
		pdb := h.pdb("pdb")
		pdb.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
		if _, err := cs.PolicyV1().PodDisruptionBudgets(h.ns).Update(context.Background(), pdb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := h.evict("a", nil); err != nil {
			t.Fatalf("AlwaysAllow: %v", err)
		}
	})

	t.Run("protobuf and policy/v1beta1 bodies are read", func(t *testing.T) {
		f := fixture(t)
		f.pod("p", corev1.PodRunning, true)
		f.budget("pdb", 2, 2, 0)
		pcfg := rest.CopyConfig(cfg)
		pcfg.ContentType = "application/vnd.kubernetes.protobuf"
		err := clientset(t, pcfg).CoreV1().Pods(f.ns).EvictV1(context.Background(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: f.ns}})
		if !apierrors.HasStatusCause(err, policyv1.DisruptionBudgetCause) {
			t.Errorf("protobuf: %v, want the budget's refusal", err)
		}
		err = cs.CoreV1().Pods(f.ns).EvictV1beta1(context.Background(), &policyv1beta1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: f.ns}})
		if !apierrors.HasStatusCause(err, policyv1.DisruptionBudgetCause) {
			t.Errorf("v1beta1: %v, want the budget's refusal", err)
		}
	})

	t.Run("DeleteOptions preconditions are honoured", func(t *testing.T) {
		f := fixture(t)
		p := f.pod("p", corev1.PodRunning, true)
		err := f.evict("p", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("other"))}})
		if !apierrors.IsConflict(err) {
			t.Fatalf("wrong UID: %v, want 409", err)
		}
		if err := f.evict("p", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1")}}); !apierrors.IsConflict(err) {
			t.Fatalf("old resourceVersion: %v, want 409", err)
		}
		if deleting, c := f.evicted("p"); deleting || c != nil {
			t.Errorf("failed preconditions changed the pod: deleting %v, condition %+v", deleting, c)
		}
		if err := f.evict("p", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID, ResourceVersion: &p.ResourceVersion}}); err != nil {
			t.Fatalf("matching preconditions: %v", err)
		}
		if deleting, _ := f.evicted("p"); !deleting {
			t.Error("not deleted")
		}
	})
}
