package controllermanager_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/controllermanager"
	"plainkube.dev/plainkube/pkg/testenv"
)

// TestLeaderElection runs two controller managers: one holds the Lease, and
// when it stops the other takes over.
func TestLeaderElection(t *testing.T) {
	env := testenv.Start(t)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	doneA := make(chan error, 1)
	go func() {
		doneA <- controllermanager.Run(ctxA, env.Config, controllermanager.Options{LeaderElect: true, Identity: "a"})
	}()
	holder := func() string {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for holder() != want {
			if time.Now().After(deadline) {
				t.Fatalf("lease holder %q, want %q", holder(), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("a")
	go controllermanager.Run(ctxB, env.Config, controllermanager.Options{LeaderElect: true, Identity: "b"})
	time.Sleep(500 * time.Millisecond)
	if h := holder(); h != "a" {
		t.Fatalf("second manager took the lease from a live leader: %q", h)
	}
	stopA()
	if err := <-doneA; err != nil {
		t.Fatalf("leader stopping on request: %v", err)
	}
	waitFor("b")
}
