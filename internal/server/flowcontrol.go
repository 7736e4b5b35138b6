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

// apfKind holds what ensuring one kind of APF object needs.
type apfKind[T apfObject] struct {
	name   string
	get    func(ctx context.Context, name string) (T, error)
	list   func(ctx context.Context) ([]T, error)
	create func(ctx context.Context, obj T) error
	update func(ctx context.Context, obj T) error
	delete func(ctx context.Context, name string) error
	// copy returns a deep copy; specEqual reports whether a stored object
	// has the bootstrap object's (defaulted) spec; setSpec copies it in.
	copy      func(T) T
	specEqual func(bootstrap, current T) bool
	setSpec   func(into, from T)
}

// ensureFlowControl creates upstream's bootstrap API Priority and Fairness
// configuration, as upstream's APF configuration controller does at start:
// missing objects are created; mandatory objects, and suggested ones
// still marked for auto-update (annotation apf.kubernetes.io/autoupdate-spec
// "true", or unmarked at generation 1), get their spec back; objects marked
// for auto-update that are no longer in the configuration are deleted.
// plainkube stores this configuration but does not act on it.
func ensureFlowControl(ctx context.Context, cs kubernetes.Interface) error {
	fsClient := cs.FlowcontrolV1().FlowSchemas()
	schemas := apfKind[*flowcontrolv1.FlowSchema]{
		name: "flow schema",
		get: func(ctx context.Context, name string) (*flowcontrolv1.FlowSchema, error) {
			return fsClient.Get(ctx, name, metav1.GetOptions{})
		},
		list: func(ctx context.Context) ([]*flowcontrolv1.FlowSchema, error) {
			l, err := fsClient.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			out := make([]*flowcontrolv1.FlowSchema, len(l.Items))
			for i := range l.Items {
				out[i] = &l.Items[i]
			}
			return out, nil
		},
		create: func(ctx context.Context, fs *flowcontrolv1.FlowSchema) error {
			_, err := fsClient.Create(ctx, fs, metav1.CreateOptions{FieldManager: flowControlManager})
			return err
		},
		update: func(ctx context.Context, fs *flowcontrolv1.FlowSchema) error {
			_, err := fsClient.Update(ctx, fs, metav1.UpdateOptions{FieldManager: flowControlManager})
			return err
		},
		delete: func(ctx context.Context, name string) error {
			return fsClient.Delete(ctx, name, metav1.DeleteOptions{})
		},
		copy: (*flowcontrolv1.FlowSchema).DeepCopy,
		specEqual: func(boot, cur *flowcontrolv1.FlowSchema) bool {
			want := boot.DeepCopy()
			flowcontrol.DefaultFlowSchema(want)
			return equality.Semantic.DeepEqual(want.Spec, cur.Spec)
		},
		setSpec: func(into, from *flowcontrolv1.FlowSchema) { into.Spec = *from.Spec.DeepCopy() },
	}
	plClient := cs.FlowcontrolV1().PriorityLevelConfigurations()
	levels := apfKind[*flowcontrolv1.PriorityLevelConfiguration]{
		name: "priority level",
		get: func(ctx context.Context, name string) (*flowcontrolv1.PriorityLevelConfiguration, error) {
			return plClient.Get(ctx, name, metav1.GetOptions{})
		},
		list: func(ctx context.Context) ([]*flowcontrolv1.PriorityLevelConfiguration, error) {
			l, err := plClient.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			out := make([]*flowcontrolv1.PriorityLevelConfiguration, len(l.Items))
			for i := range l.Items {
				out[i] = &l.Items[i]
			}
			return out, nil
		},
		create: func(ctx context.Context, pl *flowcontrolv1.PriorityLevelConfiguration) error {
			_, err := plClient.Create(ctx, pl, metav1.CreateOptions{FieldManager: flowControlManager})
			return err
		},
		update: func(ctx context.Context, pl *flowcontrolv1.PriorityLevelConfiguration) error {
			_, err := plClient.Update(ctx, pl, metav1.UpdateOptions{FieldManager: flowControlManager})
			return err
		},
		delete: func(ctx context.Context, name string) error {
			return plClient.Delete(ctx, name, metav1.DeleteOptions{})
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

func ensureAPFObjects[T apfObject](ctx context.Context, k apfKind[T], mandatory, suggested []T) error {
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
	current, err := k.list(ctx)
	if err != nil {
		return fmt.Errorf("list %ss: %w", k.name, err)
	}
	for _, obj := range current {
		if wanted[obj.GetName()] {
			continue
		}
		if auto, err := strconv.ParseBool(obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err != nil || !auto {
			continue
		}
		if err := k.delete(ctx, obj.GetName()); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete unwanted %s %s: %w", k.name, obj.GetName(), err)
		}
	}
	return nil
}

// ensureAPFObject creates boot if missing, else brings the stored object's
// spec and auto-update annotation to what boot's strategy wants.
func ensureAPFObject[T apfObject](ctx context.Context, k apfKind[T], boot T, mandatory bool) error {
	name := boot.GetName()
	cur, err := k.get(ctx, name)
	if apierrors.IsNotFound(err) {
		err = k.create(ctx, k.copy(boot))
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("create %s %s: %w", k.name, name, err)
			}
			return nil
		}
		cur, err = k.get(ctx, name)
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
	if err := k.update(ctx, revised); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("update %s %s: %w", k.name, name, err)
	}
	return nil
}
