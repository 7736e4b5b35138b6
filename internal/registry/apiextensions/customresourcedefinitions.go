package apiextensions

import (
	"context"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

// Resources returns the apiextensions.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{customResourceDefinitions()}
}

func customResourceDefinitions() registry.Resource {
	return registry.Resource{
		Kind:             apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
		Plural:           "customresourcedefinitions",
		Singular:         "customresourcedefinition",
		ShortNames:       []string{"crd", "crds"},
		Categories:       []string{"api-extensions"},
		Subresources:     []string{"status"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(obj.(*apiextensionsv1.CustomResourceDefinition))
			},
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				crd := obj.(*apiextensionsv1.CustomResourceDefinition)
				crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
				recordStorageVersion(crd)
				if !hasFinalizer(crd) {
					crd.Finalizers = append(crd.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer)
				}
			},
			PrepareForUpdate: func(_ context.Context, obj, _ runtime.Object) {
				recordStorageVersion(obj.(*apiextensionsv1.CustomResourceDefinition))
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				in, err := toInternal(obj.(*apiextensionsv1.CustomResourceDefinition))
				if err != nil {
					return field.ErrorList{field.InternalError(nil, err)}
				}
				return validation.ValidateCustomResourceDefinition(context.Background(), in)
			},
			// Updates are validated by ValidateUpdate alone: its rules
			// ratchet on the stored object.
			ValidateUpdateOnly: true,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				in, err := toInternal(obj.(*apiextensionsv1.CustomResourceDefinition))
				if err != nil {
					return field.ErrorList{field.InternalError(nil, err)}
				}
				oldIn, err := toInternal(old.(*apiextensionsv1.CustomResourceDefinition))
				if err != nil {
					return field.ErrorList{field.InternalError(nil, err)}
				}
				return validation.ValidateCustomResourceDefinitionUpdate(context.Background(), in, oldIn)
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				in, err := toInternal(obj.(*apiextensionsv1.CustomResourceDefinition))
				if err != nil {
					return field.ErrorList{field.InternalError(nil, err)}
				}
				oldIn, err := toInternal(old.(*apiextensionsv1.CustomResourceDefinition))
				if err != nil {
					return field.ErrorList{field.InternalError(nil, err)}
				}
				return validation.ValidateUpdateCustomResourceDefinitionStatus(context.Background(), in, oldIn)
			},
		},
	}
}

// recordStorageVersion adds the storage version to status.storedVersions.
func recordStorageVersion(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if !v.Storage {
			continue
		}
		for _, s := range crd.Status.StoredVersions {
			if s == v.Name {
				return
			}
		}
		crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
		return
	}
}

func hasFinalizer(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, f := range crd.Finalizers {
		if f == apiextensionsv1.CustomResourceCleanupFinalizer {
			return true
		}
	}
	return false
}

// toInternal converts a v1 CRD to the internal version upstream's
// validation works on.
func toInternal(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	out := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd.DeepCopy(), out, nil); err != nil {
		return nil, err
	}
	return out, nil
}
