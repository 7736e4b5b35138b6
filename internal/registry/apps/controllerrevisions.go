package apps

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func controllerRevisions() registry.Resource {
	return registry.Resource{
		Kind:       appsv1.SchemeGroupVersion.WithKind("ControllerRevision"),
		Plural:     "controllerrevisions",
		Singular:   "controllerrevision",
		Namespaced: true,
		Strategy: registry.Strategy{
			Validate: func(obj runtime.Object) field.ErrorList {
				cr := obj.(*appsv1.ControllerRevision)
				var errs field.ErrorList
				if cr.Data.Raw == nil && cr.Data.Object == nil {
					errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
				}
				return append(errs, nonNegative(cr.Revision, field.NewPath("revision"))...)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				cr, o := obj.(*appsv1.ControllerRevision), old.(*appsv1.ControllerRevision)
				if !sameData(cr.Data, o.Data) {
					return field.ErrorList{field.Invalid(field.NewPath("data"), cr.Data, "field is immutable")}
				}
				return nil
			},
		},
	}
}

// sameData compares two revision payloads as JSON values, so that a client
// re-sending the stored data with different spacing is not a change.
func sameData(a, b runtime.RawExtension) bool {
	if a.Object != nil || b.Object != nil {
		return equality.Semantic.DeepEqual(a, b)
	}
	var va, vb any
	errA, errB := json.Unmarshal(a.Raw, &va), json.Unmarshal(b.Raw, &vb)
	if errA != nil || errB != nil {
		return string(a.Raw) == string(b.Raw)
	}
	return equality.Semantic.DeepEqual(va, vb)
}
