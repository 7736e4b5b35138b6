package localpath

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "localpath"

// Component is the source of its events.
const Component = localpath.Provisioner + "_provisioner"

// retryAfter is how long a claim that could not be provisioned waits
// before the next try.
const retryAfter = 10 * time.Second

const (
	claimPrefix  = "claim:"
	volumePrefix = "volume:"
)

// Controller provisions local-path volumes.
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

type run struct {
	*Controller
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	nodes   corelisters.NodeLister
	rec     record.EventRecorder
}

// Workers is how many claims are provisioned at once: each is a write to
// the API server, which a burst of claims would otherwise wait on in line
// (upstream's external provisioners run many workers too).
const Workers = 10

// Workers is the number of workers the controller manager runs it with.
func (c *Controller) Workers() int { return Workers }

// Run watches claims, volumes and nodes until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	claimInf := b.Informers().Core().V1().PersistentVolumeClaims()
	volumeInf := b.Informers().Core().V1().PersistentVolumes()
	classInf := b.Informers().Storage().V1().StorageClasses()
	nodeInf := b.SharedInformers().Core().V1().Nodes()
	r := &run{Controller: c, claims: claimInf.Lister(), volumes: volumeInf.Lister(), classes: classInf.Lister(), nodes: nodeInf.Lister()}
	b.Watches(claimInf.Informer(), controller.Added|controller.Updated, func(_, obj any) []string {
		if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok && wants(claim) {
			return []string{claimPrefix + claim.Namespace + "/" + claim.Name}
		}
		return nil
	}).
		Watches(volumeInf.Informer(), controller.Added|controller.Updated, func(_, obj any) []string {
			if pv, ok := obj.(*corev1.PersistentVolume); ok && pv.DeletionTimestamp != nil && pv.Labels[localpath.NodeLabel] != "" {
				return []string{volumePrefix + pv.Name}
			}
			return nil
		}).
		Watches(nodeInf.Informer(), controller.Deleted, func(_, obj any) []string {
			node, ok := obj.(*corev1.Node)
			if !ok {
				return nil
			}
			var keys []string
			for _, pv := range r.volumesOn(node.Name) {
				keys = append(keys, volumePrefix+pv.Name)
			}
			return keys
		}).
		WaitsFor(classInf.Informer())
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		r.rec = rec
		return controller.RetryConflicts(b.Logger(), func(ctx context.Context, key string) (reconcile.Result, error) {
			if k, ok := strings.CutPrefix(key, claimPrefix); ok {
				return r.provision(ctx, k)
			}
			if k, ok := strings.CutPrefix(key, volumePrefix); ok {
				return reconcile.Result{}, r.release(ctx, k)
			}
			return reconcile.Result{}, nil
		})
	})
}

func (r *run) volumesOn(node string) []*corev1.PersistentVolume {
	all, err := r.volumes.List(labelsFor(node))
	if err != nil {
		return nil
	}
	return all
}

// provision makes the volume of the claim key, if it still waits for one.
func (r *run) provision(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return reconcile.Result{}, nil
	}
	claim, err := r.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !wants(claim)) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if _, err := r.volumes.Get(localpath.VolumeName(claim)); err == nil {
		return reconcile.Result{}, nil // made already; the binder binds it
	}
	fail := func(msg string) (reconcile.Result, error) {
		r.rec.Event(claim, corev1.EventTypeWarning, "ProvisioningFailed", msg)
		return reconcile.Result{RequeueAfter: retryAfter}, nil
	}
	className := ""
	if claim.Spec.StorageClassName != nil {
		className = *claim.Spec.StorageClassName
	}
	class, err := r.classes.Get(className)
	if err != nil {
		return fail(err.Error())
	}
	nodeName := claim.Annotations[annSelectedNode]
	node, err := r.nodes.Get(nodeName)
	if apierrors.IsNotFound(err) {
		// As upstream's provisioners: a node that is gone gives the claim
		// back to the scheduler, which picks another.
		if _, err := r.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return reconcile.Result{Requeue: true}, err // the cache is behind
		}
		return reconcile.Result{}, r.reschedule(ctx, claim, err)
	}
	if err != nil {
		return fail("failed to get target node: " + err.Error())
	}
	pv, why := volumeFor(claim, class, node)
	if why != "" {
		return fail(why)
	}
	r.rec.Eventf(claim, corev1.EventTypeNormal, "Provisioning", "External provisioner is provisioning volume for claim %q", key)
	_, err = r.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return fail("failed to provision volume with StorageClass \"" + class.Name + "\": " + err.Error())
	}
	r.rec.Eventf(claim, corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume %s", pv.Name)
	r.Log().Info("provisioned volume", "claim", key, "volume", pv.Name, "node", nodeName, "path", pv.Spec.HostPath.Path)
	return reconcile.Result{}, nil
}

// reschedule records why the claim could not be provisioned on its
// selected node and removes the node, so that the scheduler chooses again.
func (r *run) reschedule(ctx context.Context, claim *corev1.PersistentVolumeClaim, why error) error {
	r.rec.Event(claim, corev1.EventTypeWarning, "ProvisioningFailed", why.Error())
	out := claim.DeepCopy()
	delete(out.Annotations, annSelectedNode)
	if _, err := r.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, out, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	r.Log().Info("gave the claim back to the scheduler", "claim", claim.Namespace+"/"+claim.Name, "node", claim.Annotations[annSelectedNode], "err", why)
	return nil
}

// release removes the cleanup finalizer of a volume being deleted whose
// node is gone (and its folder with it).
func (r *run) release(ctx context.Context, name string) error {
	pv, err := r.volumes.Get(name)
	if err != nil {
		return nil
	}
	node := pv.Labels[localpath.NodeLabel]
	_, err = r.nodes.Get(node)
	if err == nil || !apierrors.IsNotFound(err) || !orphaned(pv, false) {
		return nil
	}
	// The cache may be behind: make sure the node is really gone.
	if _, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return err
	}
	out := pv.DeepCopy()
	out.Finalizers = slices.DeleteFunc(out.Finalizers, func(f string) bool { return f == localpath.CleanupFinalizer })
	if _, err := r.Client.CoreV1().PersistentVolumes().Update(ctx, out, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	r.Log().Info("released volume of a deleted node", "volume", name, "node", node)
	return nil
}
