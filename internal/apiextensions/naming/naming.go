package naming

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	informers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "crd-naming"

// Controller sets accepted names and the NamesAccepted condition.
type Controller struct {
	client client.CustomResourceDefinitionsGetter
	lister listers.CustomResourceDefinitionLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	// mutations keeps the CRDs this controller just wrote, so that a burst
	// of reconciles does not hand out a name twice before the informer
	// sees the first write.
	mutations cache.MutationCache
	log       *slog.Logger
}

// New builds the controller.
func New(c client.CustomResourceDefinitionsGetter, informer informers.CustomResourceDefinitionInformer) *Controller {
	ctrl := &Controller{
		client: c, lister: informer.Lister(), synced: informer.Informer().HasSynced,
		queue: reconcile.NewQueue[string](Name), log: slog.Default().With("controller", Name),
	}
	ctrl.mutations = cache.NewIntegerResourceVersionMutationCache(klog.Background(), informer.Informer().GetStore(), informer.Informer().GetIndexer(), 60*time.Second, false)
	informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { ctrl.enqueue(obj) },
		UpdateFunc: func(_, obj interface{}) {
			ctrl.enqueue(obj)
		},
		DeleteFunc: func(obj interface{}) {
			obj, _ = reconcile.DeletedObject[any](obj)
			ctrl.enqueue(obj)
		},
	})
	return ctrl
}

func (c *Controller) enqueue(obj interface{}) {
	if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
		c.queue.Add(crd.Name)
	}
}

func (c *Controller) Name() string { return Name }

// Run reconciles CRDs until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return reconcile.RunWhenSynced(ctx, c.queue, 1, c.log, c.reconcile, c.synced) // one worker: names are handed out one at a time
}

// acceptedNamesForGroup is every name held by a CRD of group.
func (c *Controller) acceptedNamesForGroup(group string) (resources, kinds sets.Set[string]) {
	resources, kinds = sets.New[string](), sets.New[string]()
	list, _ := c.lister.List(labels.Everything())
	for _, cur := range list {
		if cur.Spec.Group != group {
			continue
		}
		item := cur
		if obj, exists, err := c.mutations.GetByKey(cur.Name); exists && err == nil {
			item = obj.(*apiextensionsv1.CustomResourceDefinition)
		}
		n := item.Status.AcceptedNames
		resources.Insert(n.Plural, n.Singular)
		resources.Insert(n.ShortNames...)
		kinds.Insert(n.Kind, n.ListKind)
	}
	return resources, kinds
}

// calculate is upstream's calculateNamesAndConditions.
func (c *Controller) calculate(in *apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition, apiextensionsv1.CustomResourceDefinitionCondition) {
	allResources, allKinds := c.acceptedNamesForGroup(in.Spec.Group)
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionUnknown}
	requested, accepted := in.Spec.Names, in.Status.AcceptedNames
	newNames := in.Status.AcceptedNames
	fail := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}
	if err := equalToAcceptedOrFresh(requested.Plural, accepted.Plural, allResources); err != nil {
		fail("PluralConflict", err)
	} else {
		newNames.Plural = requested.Plural
	}
	if err := equalToAcceptedOrFresh(requested.Singular, accepted.Singular, allResources); err != nil {
		fail("SingularConflict", err)
	} else {
		newNames.Singular = requested.Singular
	}
	if !reflect.DeepEqual(requested.ShortNames, accepted.ShortNames) {
		var errs []error
		existing := sets.New(accepted.ShortNames...)
		for _, sn := range requested.ShortNames {
			if existing.Has(sn) {
				continue
			}
			if err := equalToAcceptedOrFresh(sn, "", allResources); err != nil {
				errs = append(errs, err)
			}
		}
		if err := utilerrors.NewAggregate(errs); err != nil {
			fail("ShortNamesConflict", err)
		} else {
			newNames.ShortNames = requested.ShortNames
		}
	}
	if err := equalToAcceptedOrFresh(requested.Kind, accepted.Kind, allKinds); err != nil {
		fail("KindConflict", err)
	} else {
		newNames.Kind = requested.Kind
	}
	if err := equalToAcceptedOrFresh(requested.ListKind, accepted.ListKind, allKinds); err != nil {
		fail("ListKindConflict", err)
	} else {
		newNames.ListKind = requested.ListKind
	}
	newNames.Categories = requested.Categories
	if cond.Status == apiextensionsv1.ConditionUnknown {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found"
	}
	established := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted",
	}
	if old := apihelpers.FindCRDCondition(in, apiextensionsv1.Established); old != nil {
		established = *old
	}
	if established.Status != apiextensionsv1.ConditionTrue && cond.Status == apiextensionsv1.ConditionTrue {
		established = apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "Installing", Message: "the initial names have been accepted",
		}
	}
	return newNames, cond, established
}

func equalToAcceptedOrFresh(requested, accepted string, used sets.Set[string]) error {
	if requested == accepted || !used.Has(requested) {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}

func (c *Controller) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	in, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		// The CRD is gone and has freed its names.
		return reconcile.Result{}, c.requeueGroup(name)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if equality.Semantic.DeepEqual(in.Spec.Names, in.Status.AcceptedNames) {
		return reconcile.Result{}, nil
	}
	names, namesCond, establishedCond := c.calculate(in)
	if reflect.DeepEqual(in.Status.AcceptedNames, names) &&
		apihelpers.IsCRDConditionEquivalent(&namesCond, apihelpers.FindCRDCondition(in, apiextensionsv1.NamesAccepted)) {
		return reconcile.Result{}, nil
	}
	crd := in.DeepCopy()
	crd.Status.AcceptedNames = names
	apihelpers.SetCRDCondition(crd, namesCond)
	apihelpers.SetCRDCondition(crd, establishedCond)
	updated, err := c.client.CustomResourceDefinitions().UpdateStatus(ctx, crd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return reconcile.Result{}, nil // changed meanwhile: we are called again
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	c.mutations.Mutation(updated)
	return reconcile.Result{}, c.requeueGroup(name)
}

// requeueGroup looks again at the other CRDs of name's group.
func (c *Controller) requeueGroup(name string) error {
	group := ""
	if i := indexDot(name); i >= 0 {
		group = name[i+1:]
	}
	list, err := c.lister.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, crd := range list {
		if crd.Name != name && crd.Spec.Group == group {
			c.queue.Add(crd.Name)
		}
	}
	return nil
}

func indexDot(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}
