package rootcacert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
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
	// Informers, when set, is the process's shared informer factory: the
	// controller's informers list and watch with its client (see
	// controller.Config.Shared).
	Informers *reconcile.SharedInformers

	client kubernetes.Interface
	caPEM  []byte
	log    *slog.Logger
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
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Name, Client: c.client, Logger: c.Logger, Shared: c.Informers})
	nsInf := b.Informers().Core().V1().Namespaces()
	// Only the published ConfigMaps, not every one in the cluster.
	cmInf := b.Informers().InformerFor(&corev1.ConfigMap{}, func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredConfigMapInformer(cs, metav1.NamespaceAll, resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, func(o *metav1.ListOptions) {
				o.FieldSelector = "metadata.name=" + ConfigMapName
			})
	})
	nsLister, cmLister := nsInf.Lister(), corelisters.NewConfigMapLister(cmInf.GetIndexer())
	b.For(nsInf.Informer(), corev1.SchemeGroupVersion.WithKind("Namespace")).
		Watches(cmInf, controller.Updated|controller.Deleted, controller.ToNamespace(func(cm metav1.Object) bool {
			return cm.GetName() == ConfigMapName
		}))
	c.log = b.Logger()
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, name string) (reconcile.Result, error) {
			return reconcile.Result{}, c.sync(ctx, nsLister, cmLister, name)
		}
	})
}

// sync publishes the CA bundle in namespace name, if it is active.
func (c *Controller) sync(ctx context.Context, nsLister corelisters.NamespaceLister, cmLister corelisters.ConfigMapLister, name string) error {
	ns, err := nsLister.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil:
		return nil
	}
	current, err := cmLister.ConfigMaps(name).Get(ConfigMapName)
	switch {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return err
	}
	want, write := Desired(name, current, c.caPEM)
	if !write {
		return nil
	}
	return c.write(ctx, c.log, name, current, want)
}

// write creates or updates namespace name's ConfigMap as want.
func (c *Controller) write(ctx context.Context, log *slog.Logger, name string, current, want *corev1.ConfigMap) error {
	api := c.client.CoreV1().ConfigMaps(name)
	var err error
	if current == nil {
		_, err = api.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil // the namespace went away or is going
		}
	} else {
		_, err = api.Update(ctx, want, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing %s/%s: %w", name, ConfigMapName, err)
	}
	log.Debug("published root CA", "namespace", name)
	return nil
}
