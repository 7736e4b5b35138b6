package reconcile

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// A shared factory outlives the components that start it, drops
// managedFields, and lets a restarted component add its index and handler
// again without errors or duplicate deliveries.
func TestSharedInformers(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: corev1.PodSpec{NodeName: "n1"}}
	client := fake.NewClientset(pod)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shared := NewSharedInformers(ctx, client)
	defer shared.Wait()
	defer cancel()

	byNode := func(obj any) ([]string, error) { return []string{obj.(*corev1.Pod).Spec.NodeName}, nil }
	adds := make(chan string, 10)
	handler := cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { adds <- obj.(*corev1.Pod).Name }}

	// A component runs, then stops (its context ends) and is restarted.
	inf := shared.Core().V1().Pods().Informer()
	if err := AddIndexer(inf, "node", byNode); err != nil {
		t.Fatal(err)
	}
	remove, err := AddHandler(inf, handler)
	if err != nil {
		t.Fatal(err)
	}
	componentCtx, stopComponent := context.WithCancel(ctx)
	shared.Start(componentCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	stopComponent()
	remove()
	shared.Shutdown() // a component's deferred Shutdown must not stop the shared informers

	if err := AddIndexer(inf, "node", byNode); err != nil {
		t.Fatalf("index added again after a restart: %v", err)
	}
	remove2, err := AddHandler(inf, handler)
	if err != nil {
		t.Fatal(err)
	}
	defer remove2()
	shared.Start(nil)

	if _, err := client.CoreV1().Pods("ns").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
		Spec: corev1.PodSpec{NodeName: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The first handler saw p; the second sees p (replayed on adding) and
	// then q, which only arrives if the informer kept running.
	want := map[string]int{"p": 2, "q": 1}
	got := map[string]int{}
	for deadline := time.After(5 * time.Second); len(got) < 2 || got["p"] < 2 || got["q"] < 1; {
		select {
		case n := <-adds:
			got[n]++
		case <-deadline:
			t.Fatalf("deliveries %v, want %v (did the informer stop with the component?)", got, want)
		}
	}
	select {
	case n := <-adds:
		t.Fatalf("extra delivery of %s: the removed handler is still registered", n)
	case <-time.After(100 * time.Millisecond):
	}
	objs, err := inf.GetIndexer().ByIndex("node", "n1")
	if err != nil || len(objs) != 2 {
		t.Fatalf("index node=n1: %d objects, %v; want 2", len(objs), err)
	}
	for _, o := range objs {
		if mf := o.(*corev1.Pod).ManagedFields; mf != nil {
			t.Errorf("cached pod %s keeps managedFields %v", o.(*corev1.Pod).Name, mf)
		}
	}
}
