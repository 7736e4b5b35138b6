package establish

import (
	"context"
	"crypto/x509"
	"log/slog"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	informers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "crd-establishing"

// Controller sets the Established condition.
type Controller struct {
	client client.CustomResourceDefinitionsGetter
	lister listers.CustomResourceDefinitionLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	log    *slog.Logger
}

// New builds the controller.
func New(c client.CustomResourceDefinitionsGetter, informer informers.CustomResourceDefinitionInformer) *Controller {
	return &Controller{
		client: c, lister: informer.Lister(), synced: informer.Informer().HasSynced,
		queue: reconcile.NewQueue[string](Name), log: slog.Default().With("controller", Name),
	}
}

func (c *Controller) Name() string { return Name }

// Queue asks the controller to look at CRDs whose routes now serve.
func (c *Controller) Queue(names []string) {
	for _, n := range names {
		c.queue.Add(n)
	}
}

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
	if !apihelpers.IsCRDConditionTrue(cached, apiextensionsv1.NamesAccepted) || apihelpers.IsCRDConditionTrue(cached, apiextensionsv1.Established) {
		return reconcile.Result{}, nil
	}
	crd := cached.DeepCopy()
	cond := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue,
		Reason: "InitialNamesAccepted", Message: "the initial names have been accepted",
	}
	if cv := crd.Spec.Conversion; cv != nil && cv.Webhook != nil && cv.Webhook.ClientConfig != nil && !validCABundle(cv.Webhook.ClientConfig.CABundle) {
		cond = apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
			Reason: "InvalidCABundle", Message: "The conversion webhook CABundle is invalid",
		}
	}
	apihelpers.SetCRDCondition(crd, cond)
	_, err = c.client.CustomResourceDefinitions().UpdateStatus(ctx, crd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

// validCABundle: empty (the system roots) or PEM with a certificate.
func validCABundle(b []byte) bool {
	return len(b) == 0 || x509.NewCertPool().AppendCertsFromPEM(b)
}
