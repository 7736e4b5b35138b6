package pvcprotection

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/api/claimindex"
	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "pvcprotection"

// Controller keeps claims in use from being deleted.
type Controller struct {
	controller.Base
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base}, nil
}

// Run watches claims and pods until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: "pvc-protection-controller", Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	claimInf := b.Informers().Core().V1().PersistentVolumeClaims()
	podInf := b.SharedInformers().Core().V1().Pods()
	claims := claimInf.Lister()
	// Pods by the claims they name: a claim's sync looks at its own pods,
	// not at every pod of its namespace.
	if err := reconcile.AddIndexer(podInf.Informer(), claimindex.Pods, claimindex.PodsByClaim); err != nil {
		return err
	}
	pods := podInf.Informer().GetIndexer()
	b.For(claimInf.Informer(), corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")).
		// A pod that goes away, or is scheduled, may free or hold a claim.
		Watches(podInf.Informer(), controller.AllEvents, func(_, obj any) []string {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return nil
			}
			keys, _ := claimindex.PodsByClaim(pod)
			return keys
		})
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return controller.RetryConflicts(b.Logger(), func(ctx context.Context, key string) (reconcile.Result, error) {
			return c.sync(ctx, key, claims, pods)
		})
	})
}

func (c *Controller) sync(ctx context.Context, key string, claims corelisters.PersistentVolumeClaimLister, pods cache.Indexer) (reconcile.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return reconcile.Result{}, nil
	}
	claim, err := claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	cached, err := pods.ByIndex(claimindex.Pods, key)
	if err != nil {
		return reconcile.Result{}, err
	}
	used := slices.ContainsFunc(cached, func(obj any) bool { p, ok := obj.(*corev1.Pod); return ok && podUses(p, claim) })
	api := c.Client.CoreV1().PersistentVolumeClaims(ns)
	switch plan(claim, used) {
	case Add:
		out := claim.DeepCopy()
		out.Finalizers = append(out.Finalizers, Finalizer)
		_, err := api.Update(ctx, out, metav1.UpdateOptions{})
		return reconcile.Result{}, controller.IgnoreNotFound(err)
	case Check:
		live, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return reconcile.Result{}, err
		}
		for i := range live.Items {
			if podUses(&live.Items[i], claim) {
				return reconcile.Result{}, nil // its events bring the claim back
			}
		}
		out := claim.DeepCopy()
		out.Finalizers = slices.DeleteFunc(out.Finalizers, func(f string) bool { return f == Finalizer })
		if _, err := api.Update(ctx, out, metav1.UpdateOptions{}); err != nil {
			return reconcile.Result{}, controller.IgnoreNotFound(err)
		}
		c.Log().Info("removed protection of unused claim", "claim", key)
	}
	return reconcile.Result{}, nil
}
