package core

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func namespaces() registry.Resource {
	return registry.Resource{
		Kind:       corev1.SchemeGroupVersion.WithKind("Namespace"),
		Plural:     "namespaces",
		Singular:   "namespace",
		ShortNames: []string{"ns"},
		Namespaced: false,
		// No deletecollection, as upstream: namespaces go one at a time.
		Verbs:        []string{"create", "delete", "get", "list", "patch", "update", "watch"},
		Subresources: []string{"status", "finalize"},
		Parts: map[string]registry.Part{"finalize": {UpdateOnly: true, Merge: func(obj, old runtime.Object) runtime.Object {
			out := old.DeepCopyObject().(*corev1.Namespace)
			out.Spec.Finalizers = obj.(*corev1.Namespace).Spec.Finalizers
			return out
		}}},
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultNamespace(obj.(*corev1.Namespace)) },
			// spec.finalizers hold a namespace until its content is gone;
			// it is Terminating meanwhile.
			OwnFinalizers:    func(obj runtime.Object) bool { return len(obj.(*corev1.Namespace).Spec.Finalizers) > 0 },
			PrepareForDelete: func(obj runtime.Object) { obj.(*corev1.Namespace).Status.Phase = corev1.NamespaceTerminating },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				ns := obj.(*corev1.Namespace)
				ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
				// The "kubernetes" finalizer is required on create; it may
				// later be removed through the finalize subresource.
				has := false
				for _, f := range ns.Spec.Finalizers {
					has = has || f == corev1.FinalizerKubernetes
				}
				if !has {
					ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
				}
			},
			PrepareForUpdate: func(_ context.Context, obj, old runtime.Object) {
				// Finalizers change only through the finalize subresource.
				obj.(*corev1.Namespace).Spec.Finalizers = old.(*corev1.Namespace).Spec.Finalizers
			},
			ValidateName: apivalidation.ValidateNamespaceName,
			Validate: validated(func(obj runtime.Object) field.ErrorList {
				ns := obj.(*corev1.Namespace)
				var errs field.ErrorList
				// Upstream reports these without an index.
				for _, f := range ns.Spec.Finalizers {
					errs = append(errs, validateFinalizerName(string(f), field.NewPath("spec", "finalizers"))...)
				}
				return errs
			}),
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				return ValidateNamespaceStatusUpdate(obj.(*corev1.Namespace))
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				ns := obj.(*corev1.Namespace)
				return fields.Set{
					"status.phase": string(ns.Status.Phase),
					// upstream keeps this unqualified field for compatibility
					"name": ns.Name,
				}
			},
		},
	}
}

func defaultNamespace(ns *corev1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// validateFinalizerName: a qualified name, and if unqualified one of the
// standard finalizers.
func validateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateFinalizerName(name, fldPath)
	return append(errs, validateKubeFinalizerName(name, fldPath)...)
}

// ValidateNamespaceStatusUpdate checks a namespaces/status write: the phase
// must be Active while the namespace is not being deleted, and Terminating
// once it is.
func ValidateNamespaceStatusUpdate(ns *corev1.Namespace) field.ErrorList {
	p := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			return field.ErrorList{field.Invalid(p, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty")}
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		return field.ErrorList{field.Invalid(p, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	}
	return nil
}

// ValidateNamespaceFinalize checks a namespaces/finalize write: every
// spec.finalizers entry is a valid finalizer name. The generic handler does
// not run strategy validation for that subresource; it may call this.
func ValidateNamespaceFinalize(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), p.Index(i))...)
	}
	return errs
}
