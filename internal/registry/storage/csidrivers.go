package storageapi

import (
	"context"
	"slices"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

// serviceAccountTokenInSecretsRecommended is upstream's warning to a
// driver that asks for tokens without saying where they go.
const serviceAccountTokenInSecretsRecommended = "spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes"

const (
	minTokenExpiration         = 10 * time.Minute
	maxTokenExpirationSeconds  = 1 << 32
	minAllocatableUpdatePeriod = 10
)

func csiDrivers() registry.Resource {
	return registry.Resource{
		Kind:                storagev1.SchemeGroupVersion.WithKind("CSIDriver"),
		Plural:              "csidrivers",
		ReturnDeletedObject: true,
		Singular:            "csidriver",
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultCSIDriver(&obj.(*storagev1.CSIDriver).Spec) },
			// The generation counts changes of the spec, from 0 as
			// upstream's (which does not set one on create).
			PrepareForUpdate: func(_ context.Context, obj, old runtime.Object) {
				d, o := obj.(*storagev1.CSIDriver), old.(*storagev1.CSIDriver)
				if !equality.Semantic.DeepEqual(d.Spec, o.Spec) {
					d.Generation = o.Generation + 1
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateCSIDriverSpec(&obj.(*storagev1.CSIDriver).Spec, field.NewPath("spec"))
			},
			Warnings: func(obj, old runtime.Object) []string {
				d := obj.(*storagev1.CSIDriver)
				if old != nil && equality.Semantic.DeepEqual(old.(*storagev1.CSIDriver).Spec.TokenRequests, d.Spec.TokenRequests) {
					return nil
				}
				if len(d.Spec.TokenRequests) > 0 && d.Spec.ServiceAccountTokenInSecrets == nil {
					return []string{serviceAccountTokenInSecretsRecommended}
				}
				return nil
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				d, o := obj.(*storagev1.CSIDriver), old.(*storagev1.CSIDriver)
				// Upstream reports attachRequired as "attachedRequired".
				errs := apivalidation.ValidateImmutableField(d.Spec.AttachRequired, o.Spec.AttachRequired, field.NewPath("spec", "attachedRequired"))
				return append(errs, apivalidation.ValidateImmutableField(d.Spec.VolumeLifecycleModes, o.Spec.VolumeLifecycleModes, field.NewPath("spec", "volumeLifecycleModes"))...)
			},
		},
	}
}

// defaultCSIDriver applies upstream v1.37's defaults (with its default
// feature gates: SELinuxMountReadWriteOncePod and VolumeLimitScaling on).
func defaultCSIDriver(s *storagev1.CSIDriverSpec) {
	setBool := func(p **bool, v bool) {
		if *p == nil {
			*p = &v
		}
	}
	setBool(&s.AttachRequired, true)
	setBool(&s.PodInfoOnMount, false)
	setBool(&s.StorageCapacity, false)
	if s.FSGroupPolicy == nil {
		p := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
		s.FSGroupPolicy = &p
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = append(s.VolumeLifecycleModes, storagev1.VolumeLifecyclePersistent)
	}
	setBool(&s.RequiresRepublish, false)
	setBool(&s.SELinuxMount, false)
	setBool(&s.PreventPodSchedulingIfMissing, false)
}

var (
	fsGroupPolicies = []string{
		string(storagev1.FileFSGroupPolicy), string(storagev1.NoneFSGroupPolicy), string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy),
	}
	volumeLifecycleModes = []string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}
)

func validateCSIDriverSpec(s *storagev1.CSIDriverSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	required := func(set bool, name string) {
		if !set {
			errs = append(errs, field.Required(p.Child(name), ""))
		}
	}
	required(s.AttachRequired != nil, "attachedRequired")
	required(s.PodInfoOnMount != nil, "podInfoOnMount")
	required(s.StorageCapacity != nil, "storageCapacity")
	if s.FSGroupPolicy != nil && !slices.Contains(fsGroupPolicies, string(*s.FSGroupPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("fsGroupPolicy"), s.FSGroupPolicy, fsGroupPolicies))
	}
	errs = append(errs, validateTokenRequests(s.TokenRequests, p.Child("tokenRequests"))...)
	for _, m := range s.VolumeLifecycleModes {
		if !slices.Contains(volumeLifecycleModes, string(m)) {
			errs = append(errs, field.NotSupported(p.Child("volumeLifecycleModes"), m, volumeLifecycleModes))
		}
	}
	required(s.SELinuxMount != nil, "seLinuxMount")
	if period := s.NodeAllocatableUpdatePeriodSeconds; period != nil && *period < minAllocatableUpdatePeriod {
		errs = append(errs, field.Invalid(p.Child("nodeAllocatableUpdatePeriodSeconds"), *period, "must be greater than or equal to 10 seconds"))
	}
	if s.ServiceAccountTokenInSecrets != nil && len(s.TokenRequests) == 0 {
		errs = append(errs, field.Invalid(p.Child("serviceAccountTokenInSecrets"), s.ServiceAccountTokenInSecrets,
			"serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	required(s.PreventPodSchedulingIfMissing != nil, "preventPodSchedulingIfMissing")
	return errs
}

// validateTokenRequests: one request per audience, each lasting between
// ten minutes and 2^32 seconds when it says how long.
func validateTokenRequests(requests []storagev1.TokenRequest, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, r := range requests {
		ip := p.Index(i)
		if seen[r.Audience] {
			errs = append(errs, field.Duplicate(ip.Child("audience"), r.Audience))
			continue
		}
		seen[r.Audience] = true
		if r.ExpirationSeconds == nil {
			continue
		}
		if *r.ExpirationSeconds < int64(minTokenExpiration.Seconds()) {
			errs = append(errs, field.Invalid(ip.Child("expirationSeconds"), *r.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
		}
		if *r.ExpirationSeconds > maxTokenExpirationSeconds {
			errs = append(errs, field.Invalid(ip.Child("expirationSeconds"), *r.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	return errs
}
