package controllermanager_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controllermanager"
	"plainkube.dev/plainkube/internal/reconcile"
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
		doneA <- controllermanager.Run(ctxA, env.Config, controllermanager.Options{LeaderElection: &reconcile.LeaderElection{Identity: "a"}})
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
	go controllermanager.Run(ctxB, env.Config, controllermanager.Options{LeaderElection: &reconcile.LeaderElection{Identity: "b"}})
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

// TestLeaseStolenStepsDownAndComesBack: another candidate takes the Lease
// from a leading controller manager. The manager's controllers stop (a
// new namespace gets no default ServiceAccount while the other holds the
// Lease); it campaigns again, leads once the other stops renewing, and
// its controllers work again.
func TestLeaseStolenStepsDownAndComesBack(t *testing.T) {
	env := testenv.Start(t)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controllermanager.Run(ctx, env.Config, controllermanager.Options{Controllers: []string{"serviceaccount"},
			LeaderElection: &reconcile.LeaderElection{Identity: "a", LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}})
	}()
	defer func() { stop(); <-done }()
	leases := cs.CoordinationV1().Leases("kube-system")
	lease := func() *coordinationv1.Lease {
		l, err := leases.Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
		if err != nil {
			return &coordinationv1.Lease{}
		}
		return l
	}
	holder := func() string { return ptr.Deref(lease().Spec.HolderIdentity, "") }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	defaultSA := func(ns string) func() bool {
		return func() bool {
			_, err := cs.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
			return err == nil
		}
	}
	newNamespace := func(name string) {
		t.Helper()
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("a to lead", func() bool { return holder() == "a" })
	newNamespace("before")
	waitFor("the default ServiceAccount while a leads", defaultSA("before"))

	// The thief writes itself in and renews for 4 s.
	steal := func() error {
		l := lease()
		l.Spec.HolderIdentity, l.Spec.RenewTime = ptr.To("thief"), &metav1.MicroTime{Time: time.Now()}
		_, err := leases.Update(context.Background(), l, metav1.UpdateOptions{})
		return err
	}
	waitFor("the theft", func() bool { return steal() == nil })
	until := time.Now().Add(4 * time.Second)
	for time.Now().Before(until) {
		if time.Until(until) < 2500*time.Millisecond && !defaultSA("during")() {
			// a has missed its renew deadline by now: it has stepped down.
			if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "during", metav1.GetOptions{}); err != nil {
				newNamespace("during")
			}
		}
		if holder() == "thief" {
			steal() //nolint:errcheck // a conflict with a's last renew is retried
		}
		time.Sleep(200 * time.Millisecond)
	}
	if holder() != "thief" {
		t.Fatalf("holder %q while the thief renewed", holder())
	}
	if defaultSA("during")() {
		t.Fatal("a's controllers still ran while another held the Lease")
	}
	waitFor("a to lead again", func() bool { return holder() == "a" })
	waitFor("the default ServiceAccount once a leads again", defaultSA("during"))
	if n := lease().Spec.LeaseTransitions; n == nil || *n < 1 {
		t.Errorf("lease transitions %v", n)
	}
}
