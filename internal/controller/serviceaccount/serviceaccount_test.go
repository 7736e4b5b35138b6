package serviceaccount

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

func TestDefaultServiceAccount(t *testing.T) {
	cfg := controllertest.StartServer(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)
	cs := controllertest.Clientset(t, cfg)

	waitFor := func(ns string) *corev1.ServiceAccount {
		t.Helper()
		var sa *corev1.ServiceAccount
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			sa, err = cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("no default service account in %s", ns)
		}
		return sa
	}
	// The namespaces that exist at start get one, and so does a new one.
	waitFor("kube-system")
	waitFor("default")
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := waitFor("team")

	// Deleted, it comes back.
	if err := cs.CoreV1().ServiceAccounts("team").Delete(context.Background(), "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		sa, err := cs.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{})
		return err == nil && sa.UID != first.UID, nil
	})
	if err != nil {
		t.Fatal("default service account not recreated")
	}
}
