package autoscaling

import (
	"context"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

// horizontalPodAutoscalersV1 serves the autoscaling/v2 objects at
// autoscaling/v1, converted both ways (toV2, toV1) as upstream serves one
// stored kind at both versions. Its rules are the v2 resource's, applied
// to the converted object, so errors name the v2 fields as upstream's
// (which validates its internal version, shaped as v2) do.
func horizontalPodAutoscalersV1() registry.Resource {
	v2 := horizontalPodAutoscalers()
	return registry.Resource{
		Kind: autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"),
		StoredAs: &registry.StoredAs{
			Kind: v2.Kind, Plural: v2.Plural,
			ToStorage: toV2, FromStorage: toV1,
		},
		Plural:           v2.Plural,
		Singular:         v2.Singular,
		ShortNames:       v2.ShortNames,
		Categories:       v2.Categories,
		Namespaced:       true,
		Subresources:     []string{"status"},
		TracksGeneration: true,
		// A status write keeps the spec, and so the annotations that carry
		// the rest of it in v1, from the stored object.
		Parts: map[string]registry.Part{"status": {Merge: mergeV1Status}},
		Strategy: registry.Strategy{
			// v1 defaults minReplicas; the CPU target of an HPA without
			// metrics is set by the conversion (toV2), as upstream's.
			Default: func(obj runtime.Object) {
				h := obj.(*autoscalingv1.HorizontalPodAutoscaler)
				if h.Spec.MinReplicas == nil {
					h.Spec.MinReplicas = ptr(int32(1))
				}
			},
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				h := obj.(*autoscalingv1.HorizontalPodAutoscaler)
				h.Status = autoscalingv1.HorizontalPodAutoscalerStatus{}
				keepAnnotations(h, nil, metricStatusesAnnotation, conditionsAnnotation)
			},
			// An update of the object keeps the status, and so the
			// annotations that carry the rest of it in v1.
			PrepareForUpdate: func(_ context.Context, obj, old runtime.Object) {
				keepAnnotations(obj.(*autoscalingv1.HorizontalPodAutoscaler), old.(*autoscalingv1.HorizontalPodAutoscaler),
					metricStatusesAnnotation, conditionsAnnotation)
			},
			Validate:           func(obj runtime.Object) field.ErrorList { return v2.Strategy.Validate(toV2(obj)) },
			ValidateUpdateOnly: true,
			ValidateUpdate:     func(obj, old runtime.Object) field.ErrorList { return v2.Strategy.ValidateUpdate(toV2(obj), toV2(old)) },
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				return v2.Strategy.ValidateStatusUpdate(toV2(obj), toV2(old))
			},
		},
	}
}

// keepAnnotations sets h's annotations keys to old's (removes them when
// old is nil or lacks them).
func keepAnnotations(h, old *autoscalingv1.HorizontalPodAutoscaler, keys ...string) {
	for _, k := range keys {
		v, ok := "", false
		if old != nil {
			v, ok = old.Annotations[k]
		}
		switch {
		case ok:
			if h.Annotations == nil {
				h.Annotations = map[string]string{}
			}
			h.Annotations[k] = v
		case h.Annotations != nil:
			delete(h.Annotations, k)
		}
	}
}

// mergeV1Status is a /status write at v1: the stored object with obj's
// status, the annotations that carry the status, and the metadata any
// status write may change.
func mergeV1Status(obj, old runtime.Object) runtime.Object {
	h, o := obj.(*autoscalingv1.HorizontalPodAutoscaler), old.(*autoscalingv1.HorizontalPodAutoscaler)
	out := o.DeepCopy()
	out.Status = *h.Status.DeepCopy()
	out.Annotations, out.Finalizers, out.OwnerReferences = h.Annotations, h.Finalizers, h.OwnerReferences
	keepAnnotations(out, o, metricSpecsAnnotation, behaviorSpecsAnnotation)
	return out
}
