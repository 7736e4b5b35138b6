package finalizer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	informers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "crd-finalizer"

// How often and how long the controller waits for instances to go.
var (
	pollInterval = 200 * time.Millisecond
	pollTimeout  = time.Minute
)

// Controller deletes the instances of deleted CRDs.
type Controller struct {
	client  client.CustomResourceDefinitionsGetter
	dynamic dynamic.Interface
	lister  listers.CustomResourceDefinitionLister
	synced  cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
	log     *slog.Logger
}

// New builds the controller.
func New(c client.CustomResourceDefinitionsGetter, dyn dynamic.Interface, informer informers.CustomResourceDefinitionInformer) *Controller {
	ctrl := &Controller{
		client: c, dynamic: dyn, lister: informer.Lister(), synced: informer.Informer().HasSynced,
		queue: reconcile.NewQueue[string](Name), log: slog.Default().With("controller", Name),
	}
	enqueue := func(obj interface{}) {
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok && crd.DeletionTimestamp != nil {
			ctrl.queue.Add(crd.Name)
		}
	}
	informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
	})
	return ctrl
}

func (c *Controller) Name() string { return Name }

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return reconcile.RunWhenSynced(ctx, c.queue, workers, c.log, c.reconcile, c.synced)
}

func (c *Controller) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	cached, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if cached.DeletionTimestamp == nil || !apihelpers.CRDHasFinalizer(cached, apiextensionsv1.CustomResourceCleanupFinalizer) {
		return reconcile.Result{}, nil
	}
	crd := cached.DeepCopy()
	apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
		Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress",
	})
	crd, err = c.client.CustomResourceDefinitions().UpdateStatus(ctx, crd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return reconcile.Result{Requeue: true}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		cond, delErr := c.deleteInstances(ctx, crd)
		apihelpers.SetCRDCondition(crd, cond)
		if delErr != nil {
			if _, err := c.client.CustomResourceDefinitions().UpdateStatus(ctx, crd, metav1.UpdateOptions{}); err != nil {
				c.log.Warn("recording instance deletion failure", "name", name, "err", err)
			}
			return reconcile.Result{}, delErr
		}
	} else {
		apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse,
			Reason: "NeverEstablished", Message: "resource was never established",
		})
	}
	crd, err = c.client.CustomResourceDefinitions().UpdateStatus(ctx, crd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return reconcile.Result{Requeue: true}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	// The status subresource keeps metadata: the finalizer goes with an
	// update of the CRD itself.
	apihelpers.CRDRemoveFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer)
	_, err = c.client.CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if apierrors.IsConflict(err) {
		return reconcile.Result{Requeue: true}, nil
	}
	return reconcile.Result{}, err
}

// deleteInstances deletes every instance of crd and waits until none is
// left; the condition says how it went.
func (c *Controller) deleteInstances(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionCondition, error) {
	failed := func(reason, msg string, err error) (apiextensionsv1.CustomResourceDefinitionCondition, error) {
		return apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: reason, Message: fmt.Sprintf(msg, err),
		}, err
	}
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served {
			version = v.Name
			if v.Storage {
				break
			}
		}
	}
	if version == "" {
		return apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse, Reason: "InstanceDeletionCompleted", Message: "removed all instances",
		}, nil
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Status.AcceptedNames.Plural}
	res := c.dynamic.Resource(gvr)
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		return failed("InstanceDeletionFailed", "could not list instances: %v", err)
	}
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	done := sets.New[string]()
	var errs []error
	for _, item := range list.Items {
		ns := item.GetNamespace()
		if done.Has(ns) {
			continue
		}
		done.Insert(ns)
		var err error
		if namespaced {
			err = res.Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		} else {
			err = res.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return failed("InstanceDeletionFailed", "could not issue all deletes: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, pollInterval, pollTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := res.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(l.Items) == 0, nil
	})
	if err != nil {
		return failed("InstanceDeletionCheck", "could not confirm zero CustomResources remaining: %v", err)
	}
	return apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse, Reason: "InstanceDeletionCompleted", Message: "removed all instances",
	}, nil
}
