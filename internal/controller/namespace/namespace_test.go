package namespace

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

// startController runs an in-memory control plane and the namespace
// controller against it for one test.
func startController(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg := controllertest.StartServer(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.DeletionDelay = 0
	c.del.finalizerEstimate = 1
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)
	return controllertest.Clientset(t, cfg)
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

func namespaceGone(cs kubernetes.Interface, name string) func() (bool, error) {
	return func() (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}

func createNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestNamespaceDeletionRemovesContent(t *testing.T) {
	cs := startController(t)
	ctx := context.Background()
	createNamespace(t, cs, "doomed")
	createNamespace(t, cs, "bystander")
	for _, ns := range []string{"doomed", "bystander"} {
		for i := range 3 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "v"}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 2 {
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("secret-%d", i)}, StringData: map[string]string{"k": "v"}}
			if _, err := cs.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the namespace to be removed", namespaceGone(cs, "doomed"))

	cms, err := cs.CoreV1().ConfigMaps("doomed").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := cs.CoreV1().Secrets("doomed").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 0 || len(secrets.Items) != 0 {
		t.Errorf("left behind: %d configmaps, %d secrets", len(cms.Items), len(secrets.Items))
	}
	// Another namespace is untouched.
	cms, _ = cs.CoreV1().ConfigMaps("bystander").List(ctx, metav1.ListOptions{})
	secrets, _ = cs.CoreV1().Secrets("bystander").List(ctx, metav1.ListOptions{})
	if len(cms.Items) != 3 || len(secrets.Items) != 2 {
		t.Errorf("bystander has %d configmaps, %d secrets; want 3 and 2", len(cms.Items), len(secrets.Items))
	}
}

func TestNamespaceWaitsForFinalizers(t *testing.T) {
	cs := startController(t)
	ctx := context.Background()
	createNamespace(t, cs, "held")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
	if _, err := cs.CoreV1().ConfigMaps("held").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var ns *corev1.Namespace
	eventually(t, "conditions saying content remains", func() (bool, error) {
		var err error
		ns, err = cs.CoreV1().Namespaces().Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := getCondition(ns.Status.Conditions, corev1.NamespaceFinalizersRemaining)
		return c != nil && c.Status == corev1.ConditionTrue, nil
	})
	if ns.Status.Phase != corev1.NamespaceTerminating || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		t.Errorf("namespace phase %s finalizers %v; want Terminating with kubernetes", ns.Status.Phase, ns.Spec.Finalizers)
	}
	wantConds := map[corev1.NamespaceConditionType]string{
		corev1.NamespaceFinalizersRemaining:    "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
		corev1.NamespaceContentRemaining:       "Some resources are remaining: configmaps. has 1 resource instances",
		corev1.NamespaceDeletionContentFailure: "All content successfully deleted, may be waiting on finalization",
	}
	for typ, msg := range wantConds {
		if c := getCondition(ns.Status.Conditions, typ); c == nil || c.Message != msg {
			t.Errorf("condition %s = %+v, want message %q", typ, c, msg)
		}
	}
	// The content stays, marked for deletion, until its finalizer goes.
	got, err := cs.CoreV1().ConfigMaps("held").Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp == nil {
		t.Error("configmap not marked for deletion")
	}
	got.Finalizers = nil
	if _, err := cs.CoreV1().ConfigMaps("held").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the namespace to be removed", namespaceGone(cs, "held"))
}

// TestNamespacePodsGoFirst: the rest of a namespace's content waits until
// its pods are gone (upstream's OrderedNamespaceDeletion), so a pod held
// by a finalizer keeps its ConfigMap.
func TestNamespacePodsGoFirst(t *testing.T) {
	cs := startController(t)
	ctx := context.Background()
	createNamespace(t, cs, "ordered")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Finalizers: []string{"example.com/hold"}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := cs.CoreV1().Pods("ordered").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("ordered").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "ordered", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod being deleted", func() (bool, error) {
		p, err := cs.CoreV1().Pods("ordered").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil, err
	})
	time.Sleep(300 * time.Millisecond) // passes of the controller
	if _, err := cs.CoreV1().ConfigMaps("ordered").Get(ctx, "cm", metav1.GetOptions{}); err != nil {
		t.Fatalf("the ConfigMap while the pod remains: %v", err)
	}
	p, err := cs.CoreV1().Pods("ordered").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Finalizers = nil
	if _, err := cs.CoreV1().Pods("ordered").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod to go", func() (bool, error) {
		_, err := cs.CoreV1().Pods("ordered").Get(ctx, "p", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	eventually(t, "the namespace to go", namespaceGone(cs, "ordered"))
}
