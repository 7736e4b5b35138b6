package garbagecollector

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

const ns = "default"

// startCollector runs an in-memory control plane and the garbage collector
// against it for one test.
func startCollector(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg := controllertest.StartServer(t)
	gc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gc.Logger = controllertest.Logger(t)
	controllertest.Run(t, gc, 2)
	return controllertest.Clientset(t, cfg)
}

func createCM(t *testing.T, cs kubernetes.Interface, name string, finalizers []string, owners ...*corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers}}
	for _, o := range owners {
		cm.OwnerReferences = append(cm.OwnerReferences, ownerRef(o, true))
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return got
}

func ownerRef(o *corev1.ConfigMap, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID, BlockOwnerDeletion: &block}
}

func deleteCM(t *testing.T, cs kubernetes.Interface, name string, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
}

// eventually polls cond every 20 ms for up to 10 s.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func gone(cs kubernetes.Interface, name string) func() (bool, error) {
	return func() (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}

func get(t *testing.T, cs kubernetes.Interface, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return cm
}

func TestBackgroundCascade(t *testing.T) {
	cs := startCollector(t)
	owner := createCM(t, cs, "owner", nil)
	createCM(t, cs, "dependent", nil, owner)
	createCM(t, cs, "grandchild", nil, get(t, cs, "dependent"))
	deleteCM(t, cs, "owner", metav1.DeletePropagationBackground)
	eventually(t, "dependent to be collected", gone(cs, "dependent"))
	eventually(t, "grandchild to be collected", gone(cs, "grandchild"))
}

func TestClusterScopedOwner(t *testing.T) {
	cs := startCollector(t)
	ctx := context.Background()
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "node-data", Namespace: ns, OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A secret (another kind) owned by the configmap.
	owner := get(t, cs, "node-data")
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "node-secret", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{ownerRef(owner, false)}}}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the configmap owned by the node to be collected", gone(cs, "node-data"))
	eventually(t, "the secret owned by the configmap to be collected", func() (bool, error) {
		_, err := cs.CoreV1().Secrets(ns).Get(ctx, "node-secret", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func TestDanglingReferences(t *testing.T) {
	cs := startCollector(t)
	live := createCM(t, cs, "live", nil)
	ghost := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ghost", UID: types.UID("00000000-0000-0000-0000-000000000001")}}
	// Owned only by an object that never existed: collected.
	createCM(t, cs, "orphan-of-ghost", nil, ghost)
	// Owned by a live object and a missing one: kept, missing reference dropped.
	createCM(t, cs, "half-owned", nil, live, ghost)
	// Owned by a configmap whose name now belongs to another object.
	replaced := createCM(t, cs, "replaced", nil)
	deleteCM(t, cs, "replaced", metav1.DeletePropagationOrphan)
	eventually(t, "replaced to be deleted", gone(cs, "replaced"))
	createCM(t, cs, "replaced", nil)
	createCM(t, cs, "child-of-replaced", nil, replaced)

	eventually(t, "orphan-of-ghost to be collected", gone(cs, "orphan-of-ghost"))
	eventually(t, "child-of-replaced to be collected", gone(cs, "child-of-replaced"))
	eventually(t, "half-owned to lose its dangling reference", func() (bool, error) {
		cm := get(t, cs, "half-owned")
		return len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == live.UID, nil
	})
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "live", metav1.GetOptions{}); err != nil {
		t.Errorf("live owner: %v", err)
	}
}

func TestForegroundDeletion(t *testing.T) {
	cs := startCollector(t)
	ctx := context.Background()
	owner := createCM(t, cs, "owner", nil)
	// blocking holds the owner; its finalizer holds it until we let go.
	createCM(t, cs, "blocking", []string{"example.com/hold"}, owner)
	loose := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "loose", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{ownerRef(owner, false)}}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, loose, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: get(t, cs, "owner").ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	deleteCM(t, cs, "owner", metav1.DeletePropagationForeground)
	eventually(t, "the blocking dependent to be deleted", func() (bool, error) {
		return get(t, cs, "blocking").DeletionTimestamp != nil, nil
	})
	eventually(t, "the non-blocking dependent to be deleted", gone(cs, "loose"))
	// The owner waits for its blocking dependent.
	o := get(t, cs, "owner")
	if o.DeletionTimestamp == nil || len(o.Finalizers) != 1 || o.Finalizers[0] != metav1.FinalizerDeleteDependents {
		t.Fatalf("owner while a blocking dependent remains: deletionTimestamp %v finalizers %v", o.DeletionTimestamp, o.Finalizers)
	}
	// Let the dependent go.
	b := get(t, cs, "blocking")
	b.Finalizers = nil
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the owner to be deleted", gone(cs, "owner"))

	// The watch saw the dependents go before the owner.
	if order := deletions(t, w, 3); order[2] != "owner" {
		t.Errorf("deletion order %v, want the owner last", order)
	}
}

// deletions collects the names of the first n configmaps w sees deleted.
func deletions(t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	var order []string
	timeout := time.After(10 * time.Second)
	for len(order) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed; deletions seen: %v", order)
			}
			if ev.Type == watch.Deleted {
				order = append(order, ev.Object.(*corev1.ConfigMap).Name)
			}
		case <-timeout:
			t.Fatalf("deletions seen: %v", order)
		}
	}
	return order
}

func TestForegroundChain(t *testing.T) {
	cs := startCollector(t)
	ctx := context.Background()
	top := createCM(t, cs, "top", nil)
	mid := createCM(t, cs, "mid", nil, top)
	createCM(t, cs, "leaf", nil, mid)
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: get(t, cs, "leaf").ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deleteCM(t, cs, "top", metav1.DeletePropagationForeground)
	if order := deletions(t, w, 3); fmt.Sprint(order) != "[leaf mid top]" {
		t.Errorf("deletion order %v, want [leaf mid top]", order)
	}
}

func TestOrphanDeletion(t *testing.T) {
	cs := startCollector(t)
	owner := createCM(t, cs, "owner", nil)
	other := createCM(t, cs, "other-owner", nil)
	createCM(t, cs, "dep1", nil, owner)
	createCM(t, cs, "dep2", nil, owner, other)
	deleteCM(t, cs, "owner", metav1.DeletePropagationOrphan)
	eventually(t, "the owner to be deleted", gone(cs, "owner"))
	if refs := get(t, cs, "dep1").OwnerReferences; len(refs) != 0 {
		t.Errorf("dep1 owner references = %v, want none", refs)
	}
	if refs := get(t, cs, "dep2").OwnerReferences; len(refs) != 1 || refs[0].UID != other.UID {
		t.Errorf("dep2 owner references = %v, want only other-owner", refs)
	}
}

func TestForegroundDeletionWithoutDependents(t *testing.T) {
	cs := startCollector(t)
	createCM(t, cs, "alone", nil)
	deleteCM(t, cs, "alone", metav1.DeletePropagationForeground)
	eventually(t, "the object to be deleted", gone(cs, "alone"))
}
