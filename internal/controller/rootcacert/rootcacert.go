package rootcacert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "rootcacert"

const (
	// ConfigMapName is the ConfigMap published in every namespace.
	ConfigMapName = "kube-root-ca.crt"
	// DataKey holds the CA bundle in it.
	DataKey = "ca.crt"
	// DescriptionAnnotation and Description say what it is for, as upstream.
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Controller is the root CA publisher.
type Controller struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	client kubernetes.Interface
	caPEM  []byte
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg; caPEM is the CA bundle to
// publish.
func New(cfg *rest.Config, caPEM []byte) (*Controller, error) {
	if len(caPEM) == 0 {
		return nil, errors.New("rootcacert: empty CA bundle")
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{client: cs, caPEM: caPEM}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

// Desired returns the ConfigMap a namespace should have given the current
// one (nil if none) and whether it has to be written; current is returned
// unchanged when it is right.
func Desired(namespace string, current *corev1.ConfigMap, caPEM []byte) (*corev1.ConfigMap, bool) {
	data := map[string]string{DataKey: string(caPEM)}
	if current == nil {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ConfigMapName,
				Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data: data,
		}, true
	}
	if maps.Equal(current.Data, data) && len(current.BinaryData) == 0 && current.Annotations[DescriptionAnnotation] != "" {
		return current, false
	}
	want := current.DeepCopy()
	want.Data = data
	want.BinaryData = nil
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[DescriptionAnnotation] = Description
	return want, true
}

// Run watches Namespaces and the published ConfigMaps and keeps them right
// with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	log := c.Logger
	if log == nil {
		log = slog.Default().With("controller", Name)
	}
	queue := reconcile.NewQueue[string](Name)
	factory := informers.NewSharedInformerFactory(c.client, 0)
	cmFactory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "metadata.name=" + ConfigMapName
	}))
	nsInformer := factory.Core().V1().Namespaces()
	cmInformer := cmFactory.Core().V1().ConfigMaps()
	enqueueNamespace := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok {
			queue.Add(ns.Name)
		}
	}
	enqueueConfigMap := func(obj any) {
		if cm, ok := reconcile.DeletedObject[*corev1.ConfigMap](obj); ok && cm.Name == ConfigMapName {
			queue.Add(cm.Namespace)
		}
	}
	if _, err := nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueNamespace,
		UpdateFunc: func(_, obj any) { enqueueNamespace(obj) },
	}); err != nil {
		return err
	}
	if _, err := cmInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { enqueueConfigMap(obj) },
		DeleteFunc: enqueueConfigMap,
	}); err != nil {
		return err
	}
	nsLister, cmLister := nsInformer.Lister(), cmInformer.Lister()
	factory.Start(ctx.Done())
	cmFactory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cmFactory.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, "rootcacert informers", nsInformer.Informer().HasSynced, cmInformer.Informer().HasSynced); !ok {
		queue.ShutDown()
		return err
	}
	log.Info("rootcacert controller synced")
	reconcile.ProcessQueue(ctx, queue, workers, log, func(ctx context.Context, name string) (reconcile.Result, error) {
		ns, err := nsLister.Get(name)
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, err
		}
		if ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
			return reconcile.Result{}, nil
		}
		current, err := cmLister.ConfigMaps(name).Get(ConfigMapName)
		switch {
		case apierrors.IsNotFound(err):
			current = nil
		case err != nil:
			return reconcile.Result{}, err
		}
		want, write := Desired(name, current, c.caPEM)
		if !write {
			return reconcile.Result{}, nil
		}
		api := c.client.CoreV1().ConfigMaps(name)
		if current == nil {
			_, err = api.Create(ctx, want, metav1.CreateOptions{})
			if apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return reconcile.Result{}, nil // the namespace went away or is going
			}
		} else {
			_, err = api.Update(ctx, want, metav1.UpdateOptions{})
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("writing %s/%s: %w", name, ConfigMapName, err)
		}
		log.Debug("published root CA", "namespace", name)
		return reconcile.Result{}, nil
	})
	return nil
}
