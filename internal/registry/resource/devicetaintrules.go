package resource

import (
	"context"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func deviceTaintRules() registry.Resource {
	return registry.Resource{
		Kind:             resourcev1.SchemeGroupVersion.WithKind("DeviceTaintRule"),
		Plural:           "devicetaintrules",
		Singular:         "devicetaintrule",
		Subresources:     []string{"status"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultTaint(&obj.(*resourcev1.DeviceTaintRule).Spec.Taint) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*resourcev1.DeviceTaintRule).Status = resourcev1.DeviceTaintRuleStatus{}
			},
			// A new effect is stamped with the time it was added, unless
			// the client sets a new time itself.
			PrepareForUpdate: func(_ context.Context, obj, old runtime.Object) {
				t, o := &obj.(*resourcev1.DeviceTaintRule).Spec.Taint, old.(*resourcev1.DeviceTaintRule).Spec.Taint
				if t.Effect != o.Effect && t.TimeAdded.Equal(o.TimeAdded) {
					t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateDeviceTaintRuleSpec(&obj.(*resourcev1.DeviceTaintRule).Spec, nil)
			},
			ValidateUpdateOnly: true,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateDeviceTaintRuleSpec(&obj.(*resourcev1.DeviceTaintRule).Spec, &old.(*resourcev1.DeviceTaintRule).Spec)
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				conditions, cp := obj.(*resourcev1.DeviceTaintRule).Status.Conditions, field.NewPath("status", "conditions")
				errs := metav1validation.ValidateConditions(conditions, cp)
				if len(conditions) > resourcev1.DeviceTaintRuleStatusMaxConditions {
					errs = append(errs, field.TooMany(cp, len(conditions), resourcev1.DeviceTaintRuleStatusMaxConditions))
				}
				return errs
			},
		},
	}
}

// defaultTaint stamps a taint that says no time with the current second.
func defaultTaint(t *resourcev1.DeviceTaint) {
	if t.TimeAdded == nil {
		t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	}
}

// validateDeviceTaintRuleSpec: a selector of a valid driver, pool and
// device name where given, and a valid taint (whose unchanged effect is
// accepted as stored).
func validateDeviceTaintRuleSpec(s, old *resourcev1.DeviceTaintRuleSpec) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if sel := s.DeviceSelector; sel != nil {
		sp := p.Child("deviceSelector")
		if sel.Driver != nil {
			errs = append(errs, validateDriverName(*sel.Driver, sp.Child("driver"))...)
		}
		if sel.Pool != nil {
			errs = append(errs, validatePoolName(*sel.Pool, sp.Child("pool"))...)
		}
		if sel.Device != nil {
			errs = append(errs, dnsLabel(*sel.Device, sp.Child("device"))...)
		}
	}
	var oldEffect *resourcev1.DeviceTaintEffect
	if old != nil {
		oldEffect = &old.Taint.Effect
	}
	return append(errs, validateDeviceTaint(s.Taint, oldEffect, p.Child("taint"))...)
}
