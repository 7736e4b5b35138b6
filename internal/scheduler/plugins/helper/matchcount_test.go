package helper

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

func TestMatchCounter(t *testing.T) {
	pod := func(name, app string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": app}}}
	}
	ni := framework.NewNodeInfo(pod("a", "web"), pod("b", "db"))
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	key := SelectorKey("ns", web)
	var m MatchCounter
	if got := m.Count(ni, web, "ns", key); got != 1 {
		t.Fatalf("count %d, want 1", got)
	}
	// Same generation: the memo answers, even for pods it was not shown
	// (proof that it did not count again).
	ni.Pods = append(ni.Pods, &framework.PodInfo{Pod: pod("sneaked", "web")})
	if got := m.Count(ni, web, "ns", key); got != 1 {
		t.Fatalf("memoized count %d, want 1", got)
	}
	// A change to the node is a new generation: counted afresh.
	ni.AddPod(pod("c", "web"))
	if got := m.Count(ni, web, "ns", key); got != 3 {
		t.Fatalf("count after a new pod %d, want 3", got)
	}
	// Another namespace is another question.
	if got := m.Count(ni, web, "other", SelectorKey("other", web)); got != 0 {
		t.Fatalf("count in another namespace %d, want 0", got)
	}
	// A clone that changes gets its own generation.
	clone := ni.Clone()
	clone.RemovePod(pod("c", "web"))
	if got := m.Count(clone, web, "ns", key); got != 2 {
		t.Fatalf("count on a changed clone %d, want 2", got)
	}
}
