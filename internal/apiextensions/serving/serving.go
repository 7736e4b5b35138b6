package serving

import (
	"context"
	"log/slog"
	"sort"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	informers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/apiextensions/customresource"
	"plainkube.dev/plainkube/internal/apiserver/custom"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "crd-serving"

// Installer is the API server's side (apiserver.Server).
type Installer interface {
	SetCustomResources([]*custom.Resource)
}

// Controller keeps the API server's custom resources in step with the CRDs.
type Controller struct {
	api      Installer
	lister   listers.CustomResourceDefinitionLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	opts     customresource.Options
	log      *slog.Logger
	onServed func(names []string)

	mu    sync.Mutex
	built map[types.UID]built

	syncedOnce sync.Once
	syncedCh   chan struct{}
}

type built struct {
	resourceVersion string
	cr              *custom.Resource
}

// New builds the controller. onServed, if set, is told the names of CRDs
// whose routes serve after each installation (the establishing controller).
func New(informer informers.CustomResourceDefinitionInformer, api Installer, opts customresource.Options, onServed func(names []string)) *Controller {
	c := &Controller{
		api: api, lister: informer.Lister(), synced: informer.Informer().HasSynced,
		queue: reconcile.NewQueue[string](Name), opts: opts, log: slog.Default().With("controller", Name),
		onServed: onServed, built: map[types.UID]built{}, syncedCh: make(chan struct{}),
	}
	enqueue := func(interface{}) { c.queue.Add("all") }
	informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, _ interface{}) { enqueue(nil) }, DeleteFunc: enqueue,
	})
	return c
}

func (c *Controller) Name() string { return Name }

// Synced is closed once the CRDs stored when the controller started are
// served.
func (c *Controller) Synced() <-chan struct{} { return c.syncedCh }

// Run installs custom resources until ctx ends. One worker is enough: the
// whole set is one key.
func (c *Controller) Run(ctx context.Context, _ int) error {
	c.queue.Add("all")
	return reconcile.RunWhenSynced(ctx, c.queue, 1, c.log, c.reconcile, c.synced)
}

func (c *Controller) reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	crds, err := c.lister.List(labels.Everything())
	if err != nil {
		return reconcile.Result{}, err
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	c.mu.Lock()
	next := map[types.UID]built{}
	var set []*custom.Resource
	var served []string
	for _, crd := range crds {
		if !Serves(crd) {
			continue
		}
		b, ok := c.built[crd.UID]
		if !ok || b.resourceVersion != crd.ResourceVersion {
			cr, err := customresource.New(crd, c.opts)
			if err != nil {
				c.log.Error("cannot serve CustomResourceDefinition", "name", crd.Name, "err", err)
				continue
			}
			b = built{resourceVersion: crd.ResourceVersion, cr: cr}
		}
		next[crd.UID] = b
		set = append(set, b.cr)
		served = append(served, crd.Name)
	}
	c.built = next
	c.mu.Unlock()
	c.api.SetCustomResources(set)
	c.syncedOnce.Do(func() { close(c.syncedCh) })
	if c.onServed != nil {
		c.onServed(served)
	}
	return reconcile.Result{}, nil
}

// Serves reports whether crd's routes are served: once its names are
// accepted (or it is established), as upstream's CRD handler decides.
func Serves(crd *apiextensionsv1.CustomResourceDefinition) bool {
	if crd.Status.AcceptedNames.Plural == "" || crd.Status.AcceptedNames.Kind == "" {
		return false
	}
	return apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.NamesAccepted) || apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established)
}
