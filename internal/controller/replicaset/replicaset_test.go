package replicaset

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

type env struct {
	cs  kubernetes.Interface
	cfg *rest.Config
}

// startServer runs an in-memory control plane for one test.
func startServer(t *testing.T) *env {
	t.Helper()
	cfg := controllertest.StartServer(t)
	return &env{cs: controllertest.Clientset(t, cfg), cfg: cfg}
}

// startController runs the controller against cfg until the test ends.
func startController(t *testing.T, cfg *rest.Config) *Controller {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)
	return c
}

// eventually polls cond every 20 ms for up to 15 s.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	controllertest.EventuallyWithin(t, 20*time.Millisecond, 15*time.Second, what, cond)
}

func template(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
	}
}

func newRS(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: template(name)},
	}
}

func listPods(t *testing.T, cs kubernetes.Interface, ns, selector string) []corev1.Pod {
	t.Helper()
	l, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func activePods(t *testing.T, cs kubernetes.Interface, ns, selector string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range listPods(t, cs, ns, selector) {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// markReady makes a pod Running and Ready, as a kubelet would.
func markReady(t *testing.T, cs kubernetes.Interface, p *corev1.Pod) {
	t.Helper()
	err := retryConflict(func() error {
		cur, err := cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status.Phase = corev1.PodRunning
		cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		_, err = cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("marking %s ready: %v", p.Name, err)
	}
}

func retryConflict(f func() error) error {
	for {
		err := f()
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

func getRS(t *testing.T, cs kubernetes.Interface, name string) *appsv1.ReplicaSet {
	t.Helper()
	rs, err := cs.AppsV1().ReplicaSets("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestReplicaSetCreatesPodsAndReportsStatus(t *testing.T) {
	e := startServer(t)
	startController(t, e.cfg)
	ctx := context.Background()
	rs, err := e.cs.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "3 pods and status.replicas 3", func() (bool, error) {
		got := getRS(t, e.cs, "web")
		return len(listPods(t, e.cs, "default", "app=web")) == 3 && got.Status.Replicas == 3 &&
			got.Status.ObservedGeneration == got.Generation, nil
	})
	pods := listPods(t, e.cs, "default", "app=web")
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" ||
			ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("pod %s owner = %+v", p.Name, p.OwnerReferences)
		}
		if !strings.HasPrefix(p.Name, "web-") || p.GenerateName != "web-" || p.Spec.Containers[0].Image != "nginx:1.27" {
			t.Errorf("pod %s: generateName %q image %q", p.Name, p.GenerateName, p.Spec.Containers[0].Image)
		}
	}
	got := getRS(t, e.cs, "web")
	if got.Status.FullyLabeledReplicas != 3 || got.Status.ReadyReplicas != 0 || got.Status.AvailableReplicas != 0 ||
		got.Status.TerminatingReplicas == nil || *got.Status.TerminatingReplicas != 0 {
		t.Errorf("status before ready = %+v", got.Status)
	}
	for i := range pods {
		markReady(t, e.cs, &pods[i])
	}
	eventually(t, "3 ready and available replicas", func() (bool, error) {
		s := getRS(t, e.cs, "web").Status
		return s.ReadyReplicas == 3 && s.AvailableReplicas == 3, nil
	})

	// Events: one SuccessfulCreate per pod.
	eventually(t, "SuccessfulCreate events", func() (bool, error) {
		evs, err := e.cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		if err != nil {
			return false, err
		}
		n := 0
		for _, ev := range evs.Items {
			if ev.Reason == "SuccessfulCreate" && strings.HasPrefix(ev.Message, "Created pod: web-") &&
				ev.Source.Component == ReplicaSetComponent && ev.InvolvedObject.Kind == "ReplicaSet" {
				n++
			}
		}
		return n == 3, nil
	})
}

func TestReplicaSetReplacesDeletedPodAndScalesDownTheRightPods(t *testing.T) {
	e := startServer(t)
	startController(t, e.cfg)
	ctx := context.Background()
	if _, err := e.cs.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "3 pods", func() (bool, error) { return len(activePods(t, e.cs, "default", "app=web")) == 3, nil })
	pods := activePods(t, e.cs, "default", "app=web")
	if err := e.cs.CoreV1().Pods("default").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a replacement pod", func() (bool, error) {
		now := activePods(t, e.cs, "default", "app=web")
		if len(now) != 3 {
			return false, nil
		}
		for _, p := range now {
			if p.Name == pods[0].Name {
				return false, nil
			}
		}
		return true, nil
	})

	// Make one pod ready; scaling to 1 keeps it and deletes the two
	// that are not ready.
	pods = activePods(t, e.cs, "default", "app=web")
	keep := pods[1]
	markReady(t, e.cs, &keep)
	eventually(t, "the ready pod counted", func() (bool, error) { return getRS(t, e.cs, "web").Status.ReadyReplicas == 1, nil })
	scale(t, e.cs, "web", 1)
	eventually(t, "1 pod", func() (bool, error) {
		now := activePods(t, e.cs, "default", "app=web")
		return len(now) == 1 && getRS(t, e.cs, "web").Status.Replicas == 1, nil
	})
	if now := activePods(t, e.cs, "default", "app=web"); now[0].Name != keep.Name {
		t.Errorf("kept %s, want the ready pod %s", now[0].Name, keep.Name)
	}
	eventually(t, "SuccessfulDelete events", func() (bool, error) {
		evs, err := e.cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=SuccessfulDelete"})
		if err != nil {
			return false, err
		}
		n := 0
		for _, ev := range evs.Items {
			if strings.HasPrefix(ev.Message, "Deleted pod: web-") {
				n += int(ev.Count)
			}
		}
		return n == 2, nil
	})
}

func scale(t *testing.T, cs kubernetes.Interface, name string, n int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	if _, err := cs.AppsV1().ReplicaSets("default").Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestReplicaSetAdoptsAndReleases(t *testing.T) {
	e := startServer(t)
	ctx := context.Background()
	// An orphan that matches, created before the ReplicaSet.
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{"app": "web"}},
		Spec: template("web").Spec}
	if _, err := e.cs.CoreV1().Pods("default").Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startController(t, e.cfg)
	rs, err := e.cs.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the orphan adopted and one pod created", func() (bool, error) {
		p, err := e.cs.CoreV1().Pods("default").Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.UID == rs.UID && len(activePods(t, e.cs, "default", "app=web")) == 2, nil
	})
	// Relabel the orphan: released, and replaced.
	if _, err := e.cs.CoreV1().Pods("default").Patch(ctx, "orphan", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"other"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod released and replaced", func() (bool, error) {
		p, err := e.cs.CoreV1().Pods("default").Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(p.OwnerReferences) == 0 && len(activePods(t, e.cs, "default", "app=web")) == 2, nil
	})
	if n := len(activePods(t, e.cs, "default", "")); n != 3 {
		t.Errorf("%d pods, want 3 (2 owned, 1 released)", n)
	}
}

func TestReplicationController(t *testing.T) {
	e := startServer(t)
	startController(t, e.cfg)
	ctx := context.Background()
	tmpl := template("legacy")
	rc, err := e.cs.CoreV1().ReplicationControllers("default").Create(ctx, &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy"},
		Spec:       corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](2), Template: &tmpl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "2 pods and status", func() (bool, error) {
		got, err := e.cs.CoreV1().ReplicationControllers("default").Get(ctx, "legacy", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(activePods(t, e.cs, "default", "app=legacy")) == 2 && got.Status.Replicas == 2 &&
			got.Status.FullyLabeledReplicas == 2 && got.Status.ObservedGeneration == got.Generation, nil
	})
	for _, p := range activePods(t, e.cs, "default", "app=legacy") {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != rc.UID || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" {
			t.Errorf("pod %s owner = %+v", p.Name, p.OwnerReferences)
		}
		markReady(t, e.cs, &p)
	}
	eventually(t, "2 available", func() (bool, error) {
		got, err := e.cs.CoreV1().ReplicationControllers("default").Get(ctx, "legacy", metav1.GetOptions{})
		return err == nil && got.Status.AvailableReplicas == 2 && got.Status.ReadyReplicas == 2, err
	})
	eventually(t, "events from replication-controller", func() (bool, error) {
		evs, err := e.cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=legacy"})
		if err != nil {
			return false, err
		}
		n := 0
		for _, ev := range evs.Items {
			if ev.Reason == "SuccessfulCreate" && ev.Source.Component == ReplicationControllerComponent {
				n++
			}
		}
		return n == 2, nil
	})
}

// TestBurstCreatesExactly scales a ReplicaSet to 30 and back to 30 pods
// after mass deletion, and counts every pod ever created: expectations
// must keep event bursts from over-creating.
func TestBurstCreatesExactly(t *testing.T) {
	e := startServer(t)
	startController(t, e.cfg)
	ctx := context.Background()
	w, err := e.cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	added := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
				mu.Lock()
				added[p.Name] = true
				mu.Unlock()
			}
		}
	}()
	if _, err := e.cs.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 30), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "30 pods", func() (bool, error) {
		return len(activePods(t, e.cs, "default", "app=web")) == 30 && getRS(t, e.cs, "web").Status.Replicas == 30, nil
	})
	// Delete 10 at once.
	for _, p := range activePods(t, e.cs, "default", "app=web")[:10] {
		if err := e.cs.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "30 pods again", func() (bool, error) {
		return len(activePods(t, e.cs, "default", "app=web")) == 30 && getRS(t, e.cs, "web").Status.Replicas == 30, nil
	})
	time.Sleep(300 * time.Millisecond) // anything extra would show by now
	if n := len(activePods(t, e.cs, "default", "app=web")); n != 30 {
		t.Errorf("%d pods, want 30", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(added) != 40 {
		t.Errorf("%d pods created in all, want 40", len(added))
	}
}

// failPodCreates makes every pod create through cfg fail as quota would.
func failPodCreates(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pods") {
				body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"web-\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0","reason":"Forbidden","details":{"kind":"pods","name":"web-"},"code":403}`
				return &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestFailedCreateSetsReplicaFailure(t *testing.T) {
	e := startServer(t)
	startController(t, failPodCreates(e.cfg))
	ctx := context.Background()
	if _, err := e.cs.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a ReplicaFailure condition", func() (bool, error) {
		for _, c := range getRS(t, e.cs, "web").Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue && c.Reason == "FailedCreate" &&
				strings.Contains(c.Message, "exceeded quota") {
				return true, nil
			}
		}
		return false, nil
	})
	eventually(t, "a FailedCreate event", func() (bool, error) {
		evs, err := e.cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=FailedCreate"})
		if err != nil || len(evs.Items) == 0 {
			return false, err
		}
		ev := evs.Items[0]
		return ev.Type == corev1.EventTypeWarning && strings.HasPrefix(ev.Message, `Error creating: pods "web-" is forbidden: exceeded quota`), nil
	})
}

func TestMinReadySeconds(t *testing.T) {
	e := startServer(t)
	startController(t, e.cfg)
	ctx := context.Background()
	rs := newRS("web", 2)
	rs.Spec.MinReadySeconds = 2
	if _, err := e.cs.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "2 pods", func() (bool, error) { return len(activePods(t, e.cs, "default", "app=web")) == 2, nil })
	readyAt := time.Now()
	for _, p := range activePods(t, e.cs, "default", "app=web") {
		markReady(t, e.cs, &p)
	}
	eventually(t, "2 ready, not yet available", func() (bool, error) {
		s := getRS(t, e.cs, "web").Status
		return s.ReadyReplicas == 2, nil
	})
	// Nothing else happens: the controller looks again by itself. (The
	// Ready condition's time is stored in whole seconds, so availability
	// may come up to a second early.)
	eventually(t, "2 available", func() (bool, error) { return getRS(t, e.cs, "web").Status.AvailableReplicas == 2, nil })
	if d := time.Since(readyAt); d < time.Second {
		t.Errorf("available after %v, before minReadySeconds", d)
	}
}
