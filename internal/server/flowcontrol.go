package server

import (
	"context"
	"fmt"
	"strconv"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apfbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/kubernetes"

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
// plainkube stores this configuration but does not act on it.
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
