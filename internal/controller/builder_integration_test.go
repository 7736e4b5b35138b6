package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/controller/controllertest"
	"plainkube.dev/plainkube/internal/reconcile"
)

// keyRecorder is a controller built with the Builder whose reconcile only
// records the keys it is given, and records an event for each.
type keyRecorder struct {
	config func() controller.Config
	mu     sync.Mutex
	seen   map[string]int
}

func (k *keyRecorder) Name() string { return "keys" }

func (k *keyRecorder) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(k.config())
	f := b.Informers()
	b.For(f.Apps().V1().Deployments().Informer(), appsv1.SchemeGroupVersion.WithKind("Deployment")).
		Owns(f.Apps().V1().ReplicaSets().Informer(), controller.OwnOptions{
			OrphanSelector: func(p metav1.Object) labels.Selector {
				return controller.LabelSelector(p.(*appsv1.Deployment).Spec.Selector)
			},
		})
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(_ context.Context, key string) (reconcile.Result, error) {
			k.mu.Lock()
			k.seen[key]++
			k.mu.Unlock()
			return reconcile.Result{}, nil
		}
	})
}

func (k *keyRecorder) reset() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.seen
	k.seen = map[string]int{}
	return s
}

// TestBuilder runs a Builder-wired controller against an API server: its
// primary's events, its owned objects' controller, and an orphan's
// would-be adopters each enqueue the right key.
func TestBuilder(t *testing.T) {
	cfg := controllertest.StartServer(t)
	cs := controllertest.Clientset(t, cfg)
	k := &keyRecorder{seen: map[string]int{}}
	k.config = func() controller.Config {
		return controller.Config{Name: "keys", Component: "keys-controller", Client: cs, Primary: &appsv1.Deployment{}, Resync: time.Hour,
			Logger: controllertest.Logger(t)}
	}
	controllertest.Run(t, k, 1)
	ctx := context.Background()
	waitFor := func(key string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			k.mu.Lock()
			n := k.seen[key]
			k.mu.Unlock()
			if n > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("key %s never reconciled", key)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	app := map[string]string{"app": "web"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: app},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	d, err := cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: app}, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor("default/web")
	k.reset()

	// An orphan matching the deployment's selector wakes it.
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: app},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: app}, Template: tmpl}}
	if _, err := cs.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("default/web")
	k.reset()

	// An owned ReplicaSet wakes its owner, also when it is deleted.
	rs = rs.DeepCopy()
	rs.Name = "owned"
	rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
	if _, err := cs.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("default/web")
	k.reset()
	if err := cs.AppsV1().ReplicaSets("default").Delete(ctx, "owned", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("default/web")

	// Deleting the primary enqueues its key.
	k.reset()
	if err := cs.AppsV1().Deployments("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("default/web")
}

// delayRecorder is keyRecorder with the Builder's delays and a second
// queue: updates that keep the generation wait an hour, a spec change does
// not, owned objects' events wait an hour, and the extra queue's keys are
// recorded with a prefix.
type delayRecorder struct{ keyRecorder }

func (k *delayRecorder) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(k.config())
	f := b.Informers()
	recordKeys := func(prefix string) reconcile.ReconcileFunc[string] {
		return func(_ context.Context, key string) (reconcile.Result, error) {
			k.mu.Lock()
			k.seen[prefix+key]++
			k.mu.Unlock()
			return reconcile.Result{}, nil
		}
	}
	extra := reconcile.NewQueue[string]("extra")
	extra.Add("hello")
	b.For(f.Apps().V1().Deployments().Informer(), appsv1.SchemeGroupVersion.WithKind("Deployment")).
		DelayUpdates(func(old, cur any) time.Duration {
			if old.(*appsv1.Deployment).Generation == cur.(*appsv1.Deployment).Generation {
				return time.Hour
			}
			return 0
		}).
		Owns(f.Apps().V1().ReplicaSets().Informer(), controller.OwnOptions{Delay: time.Hour}).
		Process(extra, 1, recordKeys("extra:"))
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] { return recordKeys("") })
}

// TestBuilderDelays: DelayUpdates and OwnOptions.Delay hold keys back;
// Process drains a second queue.
func TestBuilderDelays(t *testing.T) {
	cfg := controllertest.StartServer(t)
	cs := controllertest.Clientset(t, cfg)
	k := &delayRecorder{keyRecorder{seen: map[string]int{}}}
	k.config = func() controller.Config {
		return controller.Config{Name: "delays", Component: "delays-controller", Client: cs, Logger: controllertest.Logger(t)}
	}
	controllertest.Run(t, k, 1)
	ctx := context.Background()
	seen := func(key string) int {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.seen[key]
	}
	controllertest.EventuallyWithin(t, 20*time.Millisecond, 20*time.Second, "the extra queue's key", func() (bool, error) {
		return seen("extra:hello") > 0, nil
	})
	app := map[string]string{"app": "web"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: app},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	d, err := cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: app}, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.EventuallyWithin(t, 20*time.Millisecond, 20*time.Second, "the creation", func() (bool, error) {
		return seen("default/web") > 0, nil
	})
	k.reset()

	// A label change (same generation) and an owned object wait.
	d.Labels = map[string]string{"touched": "yes"}
	if d, err = cs.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "owned", Labels: app,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: app}, Template: tmpl}}
	if _, err := cs.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if n := seen("default/web"); n != 0 {
		t.Fatalf("delayed events reconciled %d times", n)
	}

	// A spec change does not.
	d.Spec.MinReadySeconds = 5
	if _, err := cs.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.EventuallyWithin(t, 20*time.Millisecond, 20*time.Second, "the spec change", func() (bool, error) {
		return seen("default/web") > 0, nil
	})
}
