package nodeipam_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/controller/nodeipam"
	"plainkube.dev/plainkube/pkg/testenv"
)

func TestNodesGetDistinctCIDRs(t *testing.T) {
	env := testenv.Start(t)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	c, err := nodeipam.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx, 1)
	// One node already has a range: it is never handed out again.
	cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "pre"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24", PodCIDRs: []string{"10.42.0.0/24"}}}, metav1.CreateOptions{})
	for i := 0; i < 5; i++ {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		done := true
		for _, n := range list.Items {
			if n.Spec.PodCIDR == "" {
				done = false
				continue
			}
			if other, dup := seen[n.Spec.PodCIDR]; dup {
				t.Fatalf("%s and %s share %s", other, n.Name, n.Spec.PodCIDR)
			}
			seen[n.Spec.PodCIDR] = n.Name
		}
		if done && len(seen) == 6 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every node got a range: %v", seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
