package server

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	apfbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	flowcontrolapply "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	flowcontrollisters "k8s.io/client-go/listers/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/apiserver"
	"plainkube.dev/plainkube/internal/apiserver/priority"
	"plainkube.dev/plainkube/internal/registry/flowcontrol"
)

// flowControlManager is the field manager of the bootstrap configuration's
// writes, upstream's.
const flowControlManager = "api-priority-and-fairness-config-producer-v1"

// apfObject is a FlowSchema or a PriorityLevelConfiguration.
type apfObject interface {
	*flowcontrolv1.FlowSchema | *flowcontrolv1.PriorityLevelConfiguration
	metav1.Object
}

// apfClient is the typed client of one APF kind, objects T, lists L.
type apfClient[T, L any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// apfKind holds what ensuring one kind of APF object needs.
type apfKind[T apfObject, L any] struct {
	name   string
	client apfClient[T, L]
	items  func(L) []T
	// copy returns a deep copy; specEqual reports whether a stored object
	// has the bootstrap object's (defaulted) spec; setSpec copies it in.
	copy      func(T) T
	specEqual func(bootstrap, current T) bool
	setSpec   func(into, from T)
}

func itemPointers[E any](items []E) []*E {
	out := make([]*E, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// ensureFlowControl creates upstream's bootstrap API Priority and Fairness
// configuration, as upstream's APF configuration controller does at start:
// missing objects are created; mandatory objects, and suggested ones
// still marked for auto-update (annotation apf.kubernetes.io/autoupdate-spec
// "true", or unmarked at generation 1), get their spec back; objects marked
// for auto-update that are no longer in the configuration are deleted.
// The server acts on the stored objects (startFlowControl).
func ensureFlowControl(ctx context.Context, cs kubernetes.Interface) error {
	schemas := apfKind[*flowcontrolv1.FlowSchema, *flowcontrolv1.FlowSchemaList]{
		name:   "flow schema",
		client: cs.FlowcontrolV1().FlowSchemas(),
		items:  func(l *flowcontrolv1.FlowSchemaList) []*flowcontrolv1.FlowSchema { return itemPointers(l.Items) },
		copy:   (*flowcontrolv1.FlowSchema).DeepCopy,
		specEqual: func(boot, cur *flowcontrolv1.FlowSchema) bool {
			want := boot.DeepCopy()
			flowcontrol.DefaultFlowSchema(want)
			return equality.Semantic.DeepEqual(want.Spec, cur.Spec)
		},
		setSpec: func(into, from *flowcontrolv1.FlowSchema) { into.Spec = *from.Spec.DeepCopy() },
	}
	levels := apfKind[*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.PriorityLevelConfigurationList]{
		name:   "priority level",
		client: cs.FlowcontrolV1().PriorityLevelConfigurations(),
		items: func(l *flowcontrolv1.PriorityLevelConfigurationList) []*flowcontrolv1.PriorityLevelConfiguration {
			return itemPointers(l.Items)
		},
		copy: (*flowcontrolv1.PriorityLevelConfiguration).DeepCopy,
		specEqual: func(boot, cur *flowcontrolv1.PriorityLevelConfiguration) bool {
			want := boot.DeepCopy()
			flowcontrol.DefaultPriorityLevel(want)
			if want.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
				// The exempt level's spec.exempt is the administrator's.
				if cur.Spec.Exempt == nil {
					return false
				}
				want.Spec.Exempt = cur.Spec.Exempt
			}
			return equality.Semantic.DeepEqual(want.Spec, cur.Spec)
		},
		setSpec: func(into, from *flowcontrolv1.PriorityLevelConfiguration) { into.Spec = *from.Spec.DeepCopy() },
	}
	// Priority levels first: the schemas name them.
	if err := ensureAPFObjects(ctx, levels, apfbootstrap.MandatoryPriorityLevelConfigurations, apfbootstrap.SuggestedPriorityLevelConfigurations); err != nil {
		return err
	}
	return ensureAPFObjects(ctx, schemas, apfbootstrap.MandatoryFlowSchemas, apfbootstrap.SuggestedFlowSchemas)
}

func ensureAPFObjects[T apfObject, L any](ctx context.Context, k apfKind[T, L], mandatory, suggested []T) error {
	wanted := map[string]bool{}
	for _, list := range []struct {
		objs      []T
		mandatory bool
	}{{mandatory, true}, {suggested, false}} {
		for _, boot := range list.objs {
			wanted[boot.GetName()] = true
			if err := ensureAPFObject(ctx, k, boot, list.mandatory); err != nil {
				return err
			}
		}
	}
	list, err := k.client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list %ss: %w", k.name, err)
	}
	for _, obj := range k.items(list) {
		if wanted[obj.GetName()] {
			continue
		}
		if auto, err := strconv.ParseBool(obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err != nil || !auto {
			continue
		}
		if err := k.client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete unwanted %s %s: %w", k.name, obj.GetName(), err)
		}
	}
	return nil
}

// ensureAPFObject creates boot if missing, else brings the stored object's
// spec and auto-update annotation to what boot's strategy wants.
func ensureAPFObject[T apfObject, L any](ctx context.Context, k apfKind[T, L], boot T, mandatory bool) error {
	name := boot.GetName()
	cur, err := k.client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = k.client.Create(ctx, k.copy(boot), metav1.CreateOptions{FieldManager: flowControlManager})
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", k.name, name, err)
		}
		cur, err = k.client.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("get %s %s: %w", k.name, name, err)
	}
	marked, parseErr := strconv.ParseBool(cur.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey])
	// Unmarked suggested objects still at generation 1 were never changed.
	autoUpdate := mandatory || (parseErr == nil && marked) || (parseErr != nil && cur.GetGeneration() == 1)
	fixAnnotation := parseErr != nil || marked != autoUpdate
	fixSpec := autoUpdate && !k.specEqual(boot, cur)
	if !fixAnnotation && !fixSpec {
		return nil
	}
	revised := k.copy(cur)
	if fixSpec {
		k.setSpec(revised, boot)
	}
	annotations := revised.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(autoUpdate)
	revised.SetAnnotations(annotations)
	if _, err := k.client.Update(ctx, revised, metav1.UpdateOptions{FieldManager: flowControlManager}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("update %s %s: %w", k.name, name, err)
	}
	return nil
}

// flowControlConsumer is the field manager of the FlowSchemas' Dangling
// conditions, upstream's.
const flowControlConsumer = "api-priority-and-fairness-config-consumer-v1"

// startFlowControl makes api classify requests by the stored FlowSchemas
// and PriorityLevelConfigurations, read by informers over the API, and
// keeps each FlowSchema's Dangling condition (whether its priority level
// exists), as upstream's APF configuration controller does.
func startFlowControl(ctx context.Context, cfg *rest.Config, api *apiserver.Server, log *slog.Logger) error {
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { notify() }, UpdateFunc: func(any, any) { notify() }, DeleteFunc: func(any) { notify() }}
	var (
		cs      kubernetes.Interface
		schemas flowcontrollisters.FlowSchemaLister
		levels  flowcontrollisters.PriorityLevelConfigurationLister
	)
	return startInformers(ctx, cfg, log, "API Priority and Fairness", func(f informers.SharedInformerFactory, client kubernetes.Interface) (func() bool, error) {
		cs = client
		fi, pi := f.Flowcontrol().V1().FlowSchemas(), f.Flowcontrol().V1().PriorityLevelConfigurations()
		schemas, levels = fi.Lister(), pi.Lister()
		for _, inf := range []cache.SharedIndexInformer{fi.Informer(), pi.Informer()} {
			if _, err := inf.AddEventHandler(handler); err != nil {
				return nil, err
			}
		}
		return func() bool { return fi.Informer().HasSynced() && pi.Informer().HasSynced() }, nil
	}, func(ctx context.Context) {
		go func() {
			for {
				fss, _ := schemas.List(labels.Everything())
				pls, _ := levels.List(labels.Everything())
				api.SetFlowControl(fss, pls)
				for _, fs := range fss {
					if err := syncDangling(ctx, cs, fs, pls); err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
						log.Warn("writing a FlowSchema's Dangling condition", "flowschema", fs.Name, "err", err)
					}
				}
				select {
				case <-ctx.Done():
					return
				case <-changed:
				}
			}
		}()
	})
}

// syncDangling writes fs's Dangling condition when it does not say
// whether its priority level (among pls) exists, with upstream's reasons
// and messages.
func syncDangling(ctx context.Context, cs kubernetes.Interface, fs *flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration) error {
	pl := fs.Spec.PriorityLevelConfiguration.Name
	status, reason, message := flowcontrolv1.ConditionFalse, "Found", fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", pl)
	if priority.Dangling(fs, pls) {
		status, reason, message = flowcontrolv1.ConditionTrue, "NotFound", fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", pl)
	}
	for _, c := range fs.Status.Conditions {
		if c.Type == flowcontrolv1.FlowSchemaConditionDangling && c.Status == status && c.Reason == reason && c.Message == message {
			return nil
		}
	}
	_, err := cs.FlowcontrolV1().FlowSchemas().ApplyStatus(ctx, flowcontrolapply.FlowSchema(fs.Name).WithStatus(flowcontrolapply.FlowSchemaStatus().WithConditions(
		flowcontrolapply.FlowSchemaCondition().WithType(flowcontrolv1.FlowSchemaConditionDangling).WithStatus(status).
			WithLastTransitionTime(metav1.Now()).WithReason(reason).WithMessage(message))),
		metav1.ApplyOptions{FieldManager: flowControlConsumer, Force: true})
	return err
}
