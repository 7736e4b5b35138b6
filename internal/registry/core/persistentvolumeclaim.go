package core

import (
	"context"
	"fmt"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

func persistentVolumeClaims() registry.Resource {
	return registry.Resource{
		Kind:                corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
		Plural:              "persistentvolumeclaims",
		ReturnDeletedObject: true,
		Singular:            "persistentvolumeclaim",
		ShortNames:          []string{"pvc"},
		Namespaced:          true,
		Subresources:        []string{"status"},
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				pvc := obj.(*corev1.PersistentVolumeClaim)
				if pvc.Status.Phase == "" {
					pvc.Status.Phase = corev1.ClaimPending
				}
				podspec.DefaultPersistentVolumeClaimSpec(&pvc.Spec)
				podspec.RoundUpResourceList(pvc.Status.Capacity)
				podspec.RoundUpResourceList(pvc.Status.AllocatedResources)
			},
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*corev1.PersistentVolumeClaim).Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
			},
			Validate: validated(func(obj runtime.Object) field.ErrorList {
				return podspec.ValidatePersistentVolumeClaimSpec(&obj.(*corev1.PersistentVolumeClaim).Spec, field.NewPath("spec"))
			}),
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validatePVCUpdate(obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim))
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				return validatePVCStatus(obj.(*corev1.PersistentVolumeClaim))
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				// upstream keeps this unqualified field for compatibility
				return fields.Set{"name": obj.(*corev1.PersistentVolumeClaim).Name}
			},
		},
	}
}

// validatePVCUpdate: a claim's spec is immutable, except that volumeName
// may be set once, storageClassName may be set when it was unset, and a
// bound claim may change its storage request (not below its capacity) and
// its volumeAttributesClassName.
func validatePVCUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	var errs field.ErrorList
	n, o := pvc.Spec.DeepCopy(), old.Spec.DeepCopy()
	if o.VolumeName == "" {
		o.VolumeName = n.VolumeName
	}
	oldAnn, hadAnn := old.Annotations[betaStorageClassAnnotation]
	newAnn, hasAnn := pvc.Annotations[betaStorageClassAnnotation]
	switch {
	case hadAnn && o.StorageClassName == nil && n.StorageClassName != nil && *n.StorageClassName == oldAnn && (!hasAnn || newAnn == oldAnn):
		// moving the class from the beta annotation to the field
		n.StorageClassName = nil
	default:
		if newAnn != oldAnn {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations", betaStorageClassAnnotation), newAnn, "field is immutable"))
		}
		if n.StorageClassName != nil && o.StorageClassName == nil && (!hadAnn || *n.StorageClassName == oldAnn) {
			n.StorageClassName = o.StorageClassName
		}
	}
	bound := pvc.Status.Phase == corev1.ClaimBound
	if bound && n.Resources.Requests != nil {
		if q, ok := o.Resources.Requests[corev1.ResourceStorage]; ok {
			n.Resources.Requests[corev1.ResourceStorage] = q
		} else {
			delete(n.Resources.Requests, corev1.ResourceStorage)
		}
	}
	if bound && n.VolumeAttributesClassName != nil {
		n.VolumeAttributesClassName = o.VolumeAttributesClassName
	}
	if !equality.Semantic.DeepEqual(*n, *o) {
		diff := cmp.Diff(*o, *n)
		errs = append(errs, field.Forbidden(field.NewPath("spec"),
			fmt.Sprintf("spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n%v", diff)))
	}
	newSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	oldSize := old.Spec.Resources.Requests[corev1.ResourceStorage]
	capSize := old.Status.Capacity[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 && newSize.Cmp(capSize) <= 0 {
		// Shrinking is allowed only to recover from a failed expansion, and
		// never to or below the capacity already provisioned.
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
	}
	errs = append(errs, immutable(pvc.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if o := old.Spec.VolumeAttributesClassName; o != nil {
		vp := field.NewPath("spec", "volumeAttributesClassName")
		if pvc.Spec.VolumeAttributesClassName == nil {
			errs = append(errs, field.Forbidden(vp, "update from non-nil value to nil is forbidden"))
		} else if *pvc.Spec.VolumeAttributesClassName == "" && *o != "" {
			errs = append(errs, field.Forbidden(vp, "update from non-nil value to an empty string is forbidden"))
		}
	}
	return errs
}

func validatePVCStatus(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	var errs field.ErrorList
	if len(pvc.Spec.AccessModes) == 0 {
		// upstream capitalises this path
		errs = append(errs, field.Required(field.NewPath("Spec", "accessModes"), ""))
	}
	for r, q := range pvc.Status.Capacity {
		if q.Value() < 0 {
			errs = append(errs, field.Invalid(field.NewPath("status", "capacity").Key(string(r)), q.Value(), "must be a valid resource quantity"))
		}
	}
	for r, q := range pvc.Status.AllocatedResources {
		p := field.NewPath("status", "allocatedResources").Key(string(r))
		if q.Value() < 0 {
			errs = append(errs, field.Invalid(p, q.Value(), "must be a valid resource quantity"))
		} else {
			errs = append(errs, podspec.ValidateResourceQuantityValue(corev1.ResourceStorage, q, p)...)
		}
	}
	return errs
}
