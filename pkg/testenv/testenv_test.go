package testenv_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/pkg/testenv"
)

func TestStartIsFastAndIsolated(t *testing.T) {
	start := time.Now()
	env := testenv.Start(t)
	t.Logf("started in %v", time.Since(start))
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := kubernetes.NewForConfigOrDie(testenv.Start(t).Config)
	if _, err := other.CoreV1().ConfigMaps("default").Get(context.Background(), "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("environments share state: %v", err)
	}
}

// TestManyInParallel starts 50 environments at once in one process.
func TestManyInParallel(t *testing.T) {
	for i := 0; i < 50; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			env := testenv.Start(t)
			cs := kubernetes.NewForConfigOrDie(env.Config)
			if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestControllersDeleteNamespaces(t *testing.T) {
	env := testenv.Start(t, testenv.WithControllers())
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{})
	cs.CoreV1().ConfigMaps("gone").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if err := cs.CoreV1().Namespaces().Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "gone", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace not deleted: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
