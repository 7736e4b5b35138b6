package daemonset

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/controller/controllertest"
	"plainkube.dev/plainkube/internal/controller/events"
)

// staleController is a Controller whose listers read caches the test
// fills by hand: an informer that has not yet shown the controller's own
// writes.
type staleController struct {
	*Controller
	dss, pods cache.Indexer
}

func newStaleController(t *testing.T, now func() time.Time, nodes ...string) *staleController {
	t.Helper()
	c, err := New(controllertest.StartServer(t))
	if err != nil {
		t.Fatal(err)
	}
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	s := &staleController{Controller: c, dss: idx(), pods: idx()}
	nodeIdx := idx()
	for _, n := range nodes {
		if err := nodeIdx.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	c.now = now
	c.dsLister, c.podLister = appslisters.NewDaemonSetLister(s.dss), corelisters.NewPodLister(s.pods)
	c.nodes, c.revisions = corelisters.NewNodeLister(nodeIdx), appslisters.NewControllerRevisionLister(idx())
	c.exp = controller.NewExpectations(now)
	c.log = controllertest.Logger(t)
	ctx, cancel := context.WithCancel(context.Background())
	rec, stop := events.NewRecorder(ctx, c.Client, Component, c.log)
	t.Cleanup(func() { stop(); cancel() })
	c.rec = rec
	return s
}

// sync runs one reconcile of ds after putting its current state, from the
// API server, into the DaemonSet cache (that informer is up to date).
func (s *staleController) sync(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	ctx := context.Background()
	cur, err := s.Client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.dss.Update(cur); err != nil {
		t.Fatal(err)
	}
	if _, err := s.syncDaemonSet(ctx, ds.Namespace+"/"+ds.Name); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

// createDS creates the DaemonSet default/agent in the API server.
func (s *staleController) createDS(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	labels := map[string]string{"app": "agent"}
	ds, err := s.Client.AppsV1().DaemonSets("default").Create(context.Background(), &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func (s *staleController) livePods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	pods, err := s.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// A sync made before the pod informer shows the pods the last one created
// creates none (upstream's expectations); once the informer's events count
// them, the DaemonSet is managed again; and expectations never met expire.
func TestSyncWaitsForItsCreatesToBeSeen(t *testing.T) {
	now := time.Now()
	s := newStaleController(t, func() time.Time { return now }, "n1", "n2")
	ds := s.createDS(t)
	key := ds.Namespace + "/" + ds.Name

	s.sync(t, ds)
	if n := len(s.livePods(t, "default")); n != 2 {
		t.Fatalf("first sync made %d pods, want 2", n)
	}
	s.sync(t, ds) // the pod cache is still empty
	pods := s.livePods(t, "default")
	if len(pods) != 2 {
		t.Fatalf("second sync before the creates were seen: %d pods, want 2", len(pods))
	}

	// The informer shows one of the two: still waiting for the other.
	if err := s.pods.Add(&pods[0]); err != nil {
		t.Fatal(err)
	}
	s.observed(key, controller.Added, nil, &pods[0])
	if s.exp.Satisfied(key) {
		t.Fatal("satisfied with one of two creates seen")
	}
	s.sync(t, ds)
	if n := len(s.livePods(t, "default")); n != 2 {
		t.Fatalf("sync with one create unseen: %d pods, want 2", n)
	}

	// Never seen (a lost event): after the timeout the DaemonSet is
	// managed from the cache again, which lacks pods[1].
	now = now.Add(controller.ExpectationsTimeout + time.Second)
	s.sync(t, ds)
	if n := len(s.livePods(t, "default")); n != 3 {
		t.Fatalf("sync after the expectations expired: %d pods, want 3", n)
	}

	// A new generation while creates are unseen is not acted on, so not
	// observed.
	cur, err := s.Client.AppsV1().DaemonSets("default").Get(context.Background(), ds.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	if _, err := s.Client.AppsV1().DaemonSets("default").Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.sync(t, ds)
	got, err := s.Client.AppsV1().DaemonSets("default").Get(context.Background(), ds.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 2 || got.Status.ObservedGeneration != 1 {
		t.Errorf("generation %d, observedGeneration %d; want 2, 1", got.Generation, got.Status.ObservedGeneration)
	}
	if n := len(s.livePods(t, "default")); n != 3 {
		t.Errorf("sync of the new generation with a create unseen: %d pods, want 3", n)
	}
}

// A pod the controller deleted is expected gone until the informer shows
// its deletion; then it is replaced.
func TestSyncWaitsForItsDeletesToBeSeen(t *testing.T) {
	now := time.Now()
	s := newStaleController(t, func() time.Time { return now }, "n1")
	ds := s.createDS(t)
	key := ds.Namespace + "/" + ds.Name
	s.sync(t, ds)
	pods := s.livePods(t, "default")
	if len(pods) != 1 {
		t.Fatalf("%d pods, want 1", len(pods))
	}
	// The pod is seen, and has failed: the controller deletes it.
	failed := pods[0].DeepCopy()
	failed.Status.Phase = corev1.PodFailed
	if err := s.pods.Add(failed); err != nil {
		t.Fatal(err)
	}
	s.observed(key, controller.Added, nil, failed)
	s.sync(t, ds)
	if n := len(s.livePods(t, "default")); n != 0 {
		t.Fatalf("failed pod not deleted: %d pods", n)
	}
	if s.exp.Satisfied(key) {
		t.Fatal("satisfied before the deletion was seen")
	}
	// The cache still shows it failed: no replacement yet.
	s.sync(t, ds)
	if n := len(s.livePods(t, "default")); n != 0 {
		t.Fatalf("replaced before its deletion was seen: %d pods", n)
	}
	// The informer shows it deleted: it is replaced.
	if err := s.pods.Delete(failed); err != nil {
		t.Fatal(err)
	}
	s.observed(key, controller.Deleted, nil, failed)
	if !s.exp.Satisfied(key) {
		t.Fatal("not satisfied once the deletion was seen")
	}
	s.sync(t, ds)
	if n := len(s.livePods(t, "default")); n != 1 {
		t.Fatalf("after the deletion was seen: %d pods, want 1", n)
	}
}
