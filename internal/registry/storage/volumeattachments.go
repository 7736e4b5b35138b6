package storageapi

import (
	"context"
	"math"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/registry/core"
)

const (
	maxAttachedVolumeMetadataSize = 256 * (1 << 10) // 256 kB
	maxVolumeErrorMessageSize     = 1024
)

func volumeAttachments() registry.Resource {
	return registry.Resource{
		Kind:                storagev1.SchemeGroupVersion.WithKind("VolumeAttachment"),
		Plural:              "volumeattachments",
		ReturnDeletedObject: true,
		Singular:            "volumeattachment",
		Subresources:        []string{"status"},
		Strategy: registry.Strategy{
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*storagev1.VolumeAttachment).Status = storagev1.VolumeAttachmentStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateVolumeAttachment(obj.(*storagev1.VolumeAttachment))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return immutableSpec(obj.(*storagev1.VolumeAttachment), old.(*storagev1.VolumeAttachment))
			},
			// A status write is checked as an update (its spec is the
			// stored one).
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				va := obj.(*storagev1.VolumeAttachment)
				return append(validateVolumeAttachment(va), immutableSpec(va, old.(*storagev1.VolumeAttachment))...)
			},
		},
	}
}

func immutableSpec(va, old *storagev1.VolumeAttachment) field.ErrorList {
	return apivalidation.ValidateImmutableField(va.Spec, old.Spec, field.NewPath("spec"))
}

func validateVolumeAttachment(va *storagev1.VolumeAttachment) field.ErrorList {
	sp := field.NewPath("spec")
	errs := podspec.ValidateCSIDriverName(va.Spec.Attacher, sp.Child("attacher"))
	errs = append(errs, validateVolumeAttachmentSource(&va.Spec.Source, sp.Child("source"))...)
	for _, msg := range apivalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
		errs = append(errs, field.Invalid(sp.Child("nodeName"), va.Spec.NodeName, msg))
	}

	st := field.NewPath("status")
	size := 0
	for k, v := range va.Status.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachedVolumeMetadataSize {
		errs = append(errs, field.TooLong(st.Child("attachmentMetadata"), "", maxAttachedVolumeMetadataSize))
	}
	errs = append(errs, validateVolumeError(va.Status.AttachError, st.Child("attachError"))...)
	errs = append(errs, validateVolumeError(va.Status.DetachError, st.Child("detachError"))...)

	if pv := va.Spec.Source.PersistentVolumeName; pv != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*pv, false) {
			errs = append(errs, field.Invalid(field.NewPath("spec.source.persistentVolumeName"), *pv, msg))
		}
	}
	return errs
}

func validateVolumeAttachmentSource(s *storagev1.VolumeAttachmentSource, p *field.Path) field.ErrorList {
	const exactlyOne = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
	switch {
	case s.InlineVolumeSpec == nil && s.PersistentVolumeName == nil:
		return field.ErrorList{field.Required(p, exactlyOne)}
	case s.InlineVolumeSpec != nil && s.PersistentVolumeName != nil:
		return field.ErrorList{field.Forbidden(p, exactlyOne)}
	case s.PersistentVolumeName != nil:
		if *s.PersistentVolumeName == "" {
			return field.ErrorList{field.Required(p.Child("persistentVolumeName"), "must specify non empty persistentVolumeName")}
		}
		return nil
	default:
		return core.ValidateInlinePersistentVolumeSpec(s.InlineVolumeSpec, p.Child("inlineVolumeSpec"))
	}
}

func validateVolumeError(e *storagev1.VolumeError, p *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	if len(e.Message) > maxVolumeErrorMessageSize {
		errs = append(errs, field.TooLong(p.Child("message"), "", maxVolumeErrorMessageSize))
	}
	if e.ErrorCode != nil && *e.ErrorCode < 0 {
		errs = append(errs, field.Invalid(p.Child("errorCode"), *e.ErrorCode, validation.InclusiveRangeError(0, math.MaxInt32)))
	}
	return errs
}
