package crcontroller_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"plainkube.dev/plainkube/examples/crcontroller"
	"plainkube.dev/plainkube/examples/crcontroller/api/v1alpha1"
	"plainkube.dev/plainkube/pkg/testenv"
)

func TestMain(m *testing.M) {
	// controller-runtime's logs: quiet unless CRCONTROLLER_LOG is set.
	if os.Getenv("CRCONTROLLER_LOG") != "" {
		ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	os.Exit(m.Run())
}

// startEnv is the whole set-up of a suite: a control plane with the
// controllers (garbage collector, namespace, deployment, replicaset…), the
// scheduler, three simulated nodes, and the App CRD.
func startEnv(t *testing.T) *testenv.Env {
	return testenv.Start(t,
		testenv.WithControllers(),
		testenv.WithScheduler(),
		testenv.WithSimNodes(3),
		testenv.WithCRDs("config/crd"),
	)
}

// startManager runs a controller-runtime manager with the App controller
// until the test ends, and returns its client.
func startManager(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  crcontroller.NewScheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Every test runs a controller named "app" in this one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&crcontroller.AppReconciler{}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	syncCtx, cancelSync := context.WithTimeout(ctx, 10*time.Second)
	defer cancelSync()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("manager's cache did not sync")
	}
	return mgr.GetClient()
}

// eventually polls cond every 50ms for up to 30s, until it returns true;
// the error it returns meanwhile is only reported if time runs out.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within 30s (last error: %v)", what, last)
	}
}

func newApp(ns, name string, replicas int32) *v1alpha1.App {
	return &v1alpha1.App{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AppSpec{
			Image:    "registry.example/web:1",
			Replicas: ptr.To(replicas),
			// Simulated pods then go at once when deleted.
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
}

func createNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until the App reports every one of its replicas ready,
// and returns it.
func waitReady(t *testing.T, c client.Client, ns, name string, replicas int32) *v1alpha1.App {
	t.Helper()
	app := &v1alpha1.App{}
	eventually(t, fmt.Sprintf("App %s/%s Ready with %d replicas", ns, name, replicas), func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(app.Status.Conditions, v1alpha1.ConditionReady)
		if cond == nil {
			return false, fmt.Errorf("no Ready condition; status %+v", app.Status)
		}
		ok := cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == app.Generation &&
			app.Status.ObservedGeneration == app.Generation && app.Status.ReadyReplicas == replicas && app.Status.Replicas == replicas
		return ok, fmt.Errorf("status %+v", app.Status)
	})
	return app
}

// appPods lists the pods of the App's Deployment.
func appPods(ctx context.Context, c client.Client, ns, name string) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": name})
	return pods.Items, err
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestAppRunsAsDeployment: the manager starts and reconciles an App into a
// Deployment it controls; the Deployment's pods are scheduled onto the
// simulated nodes and become Running and Ready; the App's status and Ready
// condition follow, through scaling by spec and by the scale subresource.
func TestAppRunsAsDeployment(t *testing.T) {
	env := startEnv(t)
	c := startManager(t, env.Config)
	ctx := context.Background()
	createNamespace(t, c, "demo")

	app := newApp("demo", "web", 3)
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}

	dep := &appsv1.Deployment{}
	eventually(t, "the App's Deployment", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "web"}, dep)
		return err == nil, err
	})
	ref := metav1.GetControllerOf(dep)
	if ref == nil || ref.Kind != "App" || ref.APIVersion != "demo.plainkube.dev/v1alpha1" || ref.UID != app.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Fatalf("Deployment's controller reference = %+v; want the App %s", ref, app.UID)
	}
	if got := ptr.Deref(dep.Spec.Replicas, 0); got != 3 {
		t.Fatalf("Deployment replicas = %d, want 3", got)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != app.Spec.Image {
		t.Fatalf("Deployment image = %q, want %q", img, app.Spec.Image)
	}

	eventually(t, "3 Running and Ready pods on simulated nodes", func(ctx context.Context) (bool, error) {
		pods, err := appPods(ctx, c, "demo", "web")
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range pods {
			p := &pods[i]
			if p.Status.Phase == corev1.PodRunning && podReady(p) && strings.HasPrefix(p.Spec.NodeName, "sim-") && p.Status.PodIP != "" {
				ready++
			}
		}
		return ready == 3 && len(pods) == 3, fmt.Errorf("%d of %d pods ready", ready, len(pods))
	})
	app = waitReady(t, c, "demo", "web", 3)
	t.Logf("App status: %+v", app.Status)

	// The controller reported its work as an events.k8s.io/v1 Event.
	eventually(t, "a DeploymentCreated event about the App", func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace("demo")); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "DeploymentCreated" && e.InvolvedObject.Kind == "App" && e.InvolvedObject.Name == "web" {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none DeploymentCreated", len(evs.Items))
	})

	// Scale by spec: the Deployment follows, and the status with it.
	patch := client.MergeFrom(app.DeepCopy())
	app.Spec.Replicas = ptr.To[int32](5)
	if err := c.Patch(ctx, app, patch); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, "demo", "web", 5)

	// Scale through the CRD's scale subresource, as kubectl scale or an
	// autoscaler would.
	app = &v1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"}}
	scalePatch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":2}}`))
	if err := c.SubResource("scale").Patch(ctx, app, scalePatch); err != nil {
		t.Fatalf("scale subresource: %v", err)
	}
	waitReady(t, c, "demo", "web", 2)
	eventually(t, "2 pods left", func(ctx context.Context) (bool, error) {
		pods, err := appPods(ctx, c, "demo", "web")
		return len(pods) == 2, err
	})
}

// TestDeletingAppCascades: deleting the App lets the garbage collector
// remove its Deployment, the Deployment's ReplicaSets and their pods, by
// ownerReferences alone.
func TestDeletingAppCascades(t *testing.T) {
	env := startEnv(t)
	c := startManager(t, env.Config)
	ctx := context.Background()
	createNamespace(t, c, "demo")

	app := newApp("demo", "doomed", 2)
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, "demo", "doomed", 2)
	rss := &appsv1.ReplicaSetList{}
	if err := c.List(ctx, rss, client.InNamespace("demo")); err != nil || len(rss.Items) == 0 {
		t.Fatalf("ReplicaSets: %d, %v", len(rss.Items), err)
	}
	if err := c.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment, ReplicaSets and pods collected", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "doomed"}, &appsv1.Deployment{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deployment: %v", err)
		}
		rss := &appsv1.ReplicaSetList{}
		if err := c.List(ctx, rss, client.InNamespace("demo")); err != nil || len(rss.Items) > 0 {
			return false, fmt.Errorf("%d ReplicaSets left (%v)", len(rss.Items), err)
		}
		pods, err := appPods(ctx, c, "demo", "doomed")
		if err != nil || len(pods) > 0 {
			return false, fmt.Errorf("%d pods left (%v)", len(pods), err)
		}
		return true, nil
	})
}

// TestDeletingNamespace: a namespace holding an App, its Deployment and
// pods is emptied — the custom resources included — and goes away.
func TestDeletingNamespace(t *testing.T) {
	env := startEnv(t)
	c := startManager(t, env.Config)
	ctx := context.Background()
	createNamespace(t, c, "tenant")
	if err := c.Create(ctx, newApp("tenant", "web", 2)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, "tenant", "web", 2)

	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "namespace tenant gone", func(ctx context.Context) (bool, error) {
		ns := &corev1.Namespace{}
		err := c.Get(ctx, client.ObjectKey{Name: "tenant"}, ns)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("phase %s, conditions %+v (%v)", ns.Status.Phase, ns.Status.Conditions, err)
	})
	apps := &v1alpha1.AppList{}
	if err := c.List(ctx, apps, client.InNamespace("tenant")); err != nil || len(apps.Items) != 0 {
		t.Fatalf("Apps left in the deleted namespace: %d (%v)", len(apps.Items), err)
	}
}
