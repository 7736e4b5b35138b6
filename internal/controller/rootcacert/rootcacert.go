package rootcacert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	controller.Base
	caPEM []byte
	log   *slog.Logger
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg; caPEM is the CA bundle to
// publish.
func New(cfg *rest.Config, caPEM []byte) (*Controller, error) {
	if len(caPEM) == 0 {
		return nil, errors.New("rootcacert: empty CA bundle")
	}
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base, caPEM: caPEM}, nil
}

// Run watches Namespaces and the published ConfigMaps and keeps them right
// with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, QueueName: "root_ca_cert_publisher", Component: Name, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
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
	observe := func(name string) (State, bool, error) {
		ns, err := nsLister.Get(name)
		if apierrors.IsNotFound(err) {
			return State{}, false, nil
		}
		if err != nil {
			return State{}, false, err
		}
		current, err := cmLister.ConfigMaps(name).Get(ConfigMapName)
		switch {
		case apierrors.IsNotFound(err):
			current = nil
		case err != nil:
			return State{}, false, err
		}
		return State{Namespace: ns, Current: current, CA: c.caPEM}, true, nil
	}
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return controller.Shape[State, Plan]{Observe: observe, Plan: plan, Apply: c.apply, Log: c.log}.Reconcile
	})
}

// apply writes the ConfigMap the plan wants, if any.
func (c *Controller) apply(ctx context.Context, st State, p Plan) (reconcile.Result, error) {
	if p.Write == nil {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, c.write(ctx, c.log, st.Namespace.Name, st.Current, p.Write)
}

// write creates or updates namespace name's ConfigMap as want.
func (c *Controller) write(ctx context.Context, log *slog.Logger, name string, current, want *corev1.ConfigMap) error {
	api := c.Client.CoreV1().ConfigMaps(name)
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
