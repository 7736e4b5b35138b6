package podgc

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

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

func TestPodGC(t *testing.T) {
	cfg := controllertest.StartServer(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	c.Quarantine = 300 * time.Millisecond
	c.Period = 100 * time.Millisecond
	c.TerminatedPodThreshold = 2
	cs := controllertest.Clientset(t, cfg)
	bg := context.Background()

	if _, err := cs.CoreV1().Nodes().Create(bg, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "up"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mkPod := func(name, node string, phase corev1.PodPhase) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		created, err := cs.CoreV1().Pods("default").Create(bg, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Phase = phase
		if _, err := cs.CoreV1().Pods("default").UpdateStatus(bg, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mkPod("alive", "up", corev1.PodRunning)
	mkPod("orphan", "gone", corev1.PodRunning)
	for i := range 4 {
		mkPod(fmt.Sprintf("done-%d", i), "up", corev1.PodSucceeded)
	}

	controllertest.Run(t, c, 2)

	gone := func(name string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}
	}
	for _, name := range []string{"orphan", "done-0", "done-1"} {
		if err := wait.PollUntilContextTimeout(bg, 20*time.Millisecond, 10*time.Second, true, gone(name)); err != nil {
			t.Fatalf("pod %s not collected", name)
		}
	}

	// A node deleted later takes its pods with it, terminating ones too.
	mkPod("on-doomed", "doomed", corev1.PodRunning) // bound before the node exists: quarantined
	if _, err := cs.CoreV1().Nodes().Create(bg, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mkPod("terminating-on-doomed", "doomed", corev1.PodRunning)
	if err := cs.CoreV1().Pods("default").Delete(bg, "terminating-on-doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // past the quarantine: the node exists, nothing happens
	for _, name := range []string{"on-doomed", "terminating-on-doomed"} {
		if ok, _ := gone(name)(bg); ok {
			t.Fatalf("pod %s collected while its node exists", name)
		}
	}
	if err := cs.CoreV1().Nodes().Delete(bg, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"on-doomed", "terminating-on-doomed"} {
		if err := wait.PollUntilContextTimeout(bg, 20*time.Millisecond, 10*time.Second, true, gone(name)); err != nil {
			t.Fatalf("pod %s not collected", name)
		}
	}

	time.Sleep(200 * time.Millisecond)
	list, err := cs.CoreV1().Pods("default").List(bg, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range list.Items {
		left = append(left, p.Name)
	}
	slices.Sort(left)
	if !slices.Equal(left, []string{"alive", "done-2", "done-3"}) {
		t.Errorf("pods left: %v", left)
	}
}
