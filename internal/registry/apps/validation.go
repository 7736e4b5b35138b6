package apps

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
)

// Rules shared by the workload kinds of this group.

func int32Ptr(v int32) *int32 { return &v }

func deref32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func nonNegative(v int64, p *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(v, p)
}

// strictSelector is how the workload kinds validate spec.selector: label
// values must be valid (upstream relaxes this only for objects stored before
// the rule existed).
var strictSelector = metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: false}

// validateRequiredSelector checks a selector that must be present and
// non-empty; kind names the resource in the "empty selector" message.
func validateRequiredSelector(sel *metav1.LabelSelector, p *field.Path, kind string) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, strictSelector, p)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(p, sel, "empty selector is invalid for "+kind))
	}
	return errs
}

// selectorMismatch reports a template whose labels the selector does not
// select.
func selectorMismatch(sel labels.Selector, tmpl *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	if !sel.Empty() && !sel.Matches(labels.Set(tmpl.Labels)) {
		return field.ErrorList{field.Invalid(p.Child("metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`")}
	}
	return nil
}

// validateReplicaSetTemplate is upstream's check of the pod template of a
// ReplicaSet or Deployment: it matches the selector, is a valid pod
// template, restarts Always and has no deadline.
func validateReplicaSetTemplate(tmpl *corev1.PodTemplateSpec, sel labels.Selector, p *field.Path, kind string) field.ErrorList {
	errs := selectorMismatch(sel, tmpl, p)
	errs = append(errs, podspec.ValidatePodTemplateSpec(tmpl, p)...)
	errs = append(errs, validateAlwaysRestart(tmpl, p, kind)...)
	return errs
}

func validateAlwaysRestart(tmpl *corev1.PodTemplateSpec, p *field.Path, kind string) field.ErrorList {
	var errs field.ErrorList
	if tmpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(p.Child("spec", "restartPolicy"), tmpl.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if tmpl.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(p.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// validatePositiveIntOrPercent accepts a non-negative integer or a
// percentage string such as "25%".
func validatePositiveIntOrPercent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch v.Type {
	case intstr.String:
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(p, v, msg))
		}
	case intstr.Int:
		errs = append(errs, nonNegative(int64(v.IntValue()), p)...)
	default:
		errs = append(errs, field.Invalid(p, v, "must be an integer or percentage (e.g '5%')"))
	}
	return errs
}

// percentValue returns the number in a valid percentage string.
func percentValue(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) != 0 {
		return 0, false
	}
	n, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1])
	return n, true
}

// intOrPercentValue is the number in v, whether a count or a percentage.
func intOrPercentValue(v intstr.IntOrString) int {
	if n, ok := percentValue(v); ok {
		return n
	}
	return v.IntValue()
}

func notMoreThan100Percent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	if n, ok := percentValue(v); ok && n > 100 {
		return field.ErrorList{field.Invalid(p, v, "must not be greater than 100%")}
	}
	return nil
}

func derefIntOrString(p *intstr.IntOrString) intstr.IntOrString {
	if p == nil {
		return intstr.FromInt32(0)
	}
	return *p
}

// validateCollisionCount rejects a status.collisionCount that goes down.
func validateCollisionCount(newCount, oldCount *int32) field.ErrorList {
	if oldCount == nil || (newCount != nil && *newCount >= *oldCount) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("status", "collisionCount"), deref32(newCount), "cannot be decremented")}
}

// immutableSelector is the apps/v1 rule that spec.selector never changes.
func immutableSelector(newSel, oldSel *metav1.LabelSelector) field.ErrorList {
	return apivalidation.ValidateImmutableField(newSel, oldSel, field.NewPath("spec", "selector"))
}
