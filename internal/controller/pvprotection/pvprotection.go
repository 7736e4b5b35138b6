package pvprotection

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "pvprotection"

// Finalizer is the volume's protection finalizer, as upstream's.
const Finalizer = "kubernetes.io/pv-protection"

// Controller keeps bound volumes from being deleted.
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

// plan is the volume's finalizers as they should be (changed false: as
// they are).
func plan(pv *corev1.PersistentVolume) (finalizers []string, changed bool) {
	has := slices.Contains(pv.Finalizers, Finalizer)
	switch {
	case pv.DeletionTimestamp == nil && !has:
		return append(slices.Clone(pv.Finalizers), Finalizer), true
	case pv.DeletionTimestamp != nil && has && pv.Status.Phase != corev1.VolumeBound:
		return slices.DeleteFunc(slices.Clone(pv.Finalizers), func(f string) bool { return f == Finalizer }), true
	}
	return pv.Finalizers, false
}

// Run watches volumes until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: "pv-protection-controller", Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	inf := b.Informers().Core().V1().PersistentVolumes()
	volumes := inf.Lister()
	b.For(inf.Informer(), corev1.SchemeGroupVersion.WithKind("PersistentVolume"))
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return controller.RetryConflicts(b.Logger(), func(ctx context.Context, name string) (reconcile.Result, error) {
			pv, err := volumes.Get(name)
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			if err != nil {
				return reconcile.Result{}, err
			}
			finalizers, changed := plan(pv)
			if !changed {
				return reconcile.Result{}, nil
			}
			out := pv.DeepCopy()
			out.Finalizers = finalizers
			_, err = c.Client.CoreV1().PersistentVolumes().Update(ctx, out, metav1.UpdateOptions{})
			if apierrors.IsNotFound(err) {
				err = nil
			}
			return reconcile.Result{}, err
		})
	})
}
