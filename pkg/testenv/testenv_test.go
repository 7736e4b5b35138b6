package testenv_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

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

// TestReset: a shared environment goes back to its start state — the
// test's objects gone, changed ones as they were — and its controllers go
// on working.
func TestReset(t *testing.T) {
	env := testenv.Start(t, testenv.WithControllers("deployment", "replicaset"), testenv.WithScheduler(), testenv.WithSimNodes(1))
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	deployWeb := func() {
		t.Helper()
		labels := map[string]string{"app": "web"}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web"}}}}}}
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			if err == nil && len(pods.Items) == 2 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the deployment's pods: %v %v", pods, err)
			}
		}
	}
	deployWeb()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels["touched"] = "yes"
	if _, err := cs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := env.Reset(); err != nil {
		t.Fatal(err)
	}
	t.Logf("reset in %v", time.Since(start))
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the test's ConfigMap after a reset: %v", err)
	}
	if pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Errorf("pods after a reset: %d, %v", len(pods.Items), err)
	}
	if ns, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil || ns.Labels["touched"] != "" {
		t.Errorf("namespace default after a reset: %v, %v", ns.Labels, err)
	}
	deployWeb() // the controllers still work
}
