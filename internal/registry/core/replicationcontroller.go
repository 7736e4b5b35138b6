package core

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func replicationControllers() registry.Resource {
	return registry.Resource{
		Kind:             corev1.SchemeGroupVersion.WithKind("ReplicationController"),
		Plural:           "replicationcontrollers",
		Singular:         "replicationcontroller",
		ShortNames:       []string{"rc"},
		Categories:       []string{"all"},
		Namespaced:       true,
		Subresources:     []string{"status", "scale"},
		Scale:            registry.ReplicasScale,
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultReplicationController(obj.(*corev1.ReplicationController)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*corev1.ReplicationController).Status = corev1.ReplicationControllerStatus{}
			},
			Validate: validated(func(obj runtime.Object) field.ErrorList {
				return validateReplicationControllerSpec(&obj.(*corev1.ReplicationController).Spec, field.NewPath("spec"))
			}),
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				return validateReplicationControllerStatus(&obj.(*corev1.ReplicationController).Status, field.NewPath("status"))
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*corev1.ReplicationController).Status.Replicas))}
			},
		},
	}
}

// defaultReplicationController: selector and labels default to the pod
// template's labels, replicas to 1, and the template is defaulted.
func defaultReplicationController(rc *corev1.ReplicationController) {
	if rc.Spec.Template != nil && rc.Spec.Template.Labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = rc.Spec.Template.Labels
		}
		if len(rc.Labels) == 0 {
			rc.Labels = rc.Spec.Template.Labels
		}
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
	podspec.DefaultPodTemplateSpec(rc.Spec.Template)
}

func validateReplicationControllerSpec(spec *corev1.ReplicationControllerSpec, fldPath *field.Path) field.ErrorList {
	errs := nonNegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))
	selector := labels.Set(spec.Selector).AsSelector()
	if selector.Empty() {
		errs = append(errs, field.Required(fldPath.Child("selector"), ""))
	}
	replicas := int32(0)
	if spec.Replicas != nil {
		replicas = *spec.Replicas
	}
	errs = append(errs, nonNegative(int64(replicas), fldPath.Child("replicas"))...)
	tp := fldPath.Child("template")
	if spec.Template == nil {
		return append(errs, field.Required(tp, ""))
	}
	if !selector.Empty() && !selector.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, podspec.ValidatePodTemplateSpec(spec.Template, tp)...)
	if spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), spec.Template.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if spec.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tp.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicationController is not Supported"))
	}
	return errs
}

func validateReplicationControllerStatus(st *corev1.ReplicationControllerStatus, p *field.Path) field.ErrorList {
	errs := nonNegative(int64(st.Replicas), p.Child("replicas"))
	errs = append(errs, nonNegative(int64(st.FullyLabeledReplicas), p.Child("fullyLabeledReplicas"))...)
	errs = append(errs, nonNegative(int64(st.ReadyReplicas), p.Child("readyReplicas"))...)
	errs = append(errs, nonNegative(int64(st.AvailableReplicas), p.Child("availableReplicas"))...)
	errs = append(errs, nonNegative(st.ObservedGeneration, p.Child("observedGeneration"))...)
	const msg = "cannot be greater than status.replicas"
	if st.FullyLabeledReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("fullyLabeledReplicas"), st.FullyLabeledReplicas, msg))
	}
	if st.ReadyReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), st.ReadyReplicas, msg))
	}
	if st.AvailableReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, msg))
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}
