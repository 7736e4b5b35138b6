package storagemigration

import (
	"context"
	"strings"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

// Resources returns the storagemigration.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{storageVersionMigrations()}
}

func storageVersionMigrations() registry.Resource {
	return registry.Resource{
		Kind:         storagemigrationv1.SchemeGroupVersion.WithKind("StorageVersionMigration"),
		Plural:       "storageversionmigrations",
		Singular:     "storageversionmigration",
		Subresources: []string{"status"},
		Strategy: registry.Strategy{
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*storagemigrationv1.StorageVersionMigration).Status = storagemigrationv1.StorageVersionMigrationStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateSVM(obj.(*storagemigrationv1.StorageVersionMigration))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				svm, o := obj.(*storagemigrationv1.StorageVersionMigration), old.(*storagemigrationv1.StorageVersionMigration)
				return apivalidation.ValidateImmutableField(svm.Spec, o.Spec, field.NewPath("spec"))
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateSVMStatusUpdate(obj.(*storagemigrationv1.StorageVersionMigration), old.(*storagemigrationv1.StorageVersionMigration))
			},
		},
	}
}

func validateSVM(svm *storagemigrationv1.StorageVersionMigration) field.ErrorList {
	var errs field.ErrorList
	rp := field.NewPath("spec", "resource")
	if r := svm.Spec.Resource.Resource; r == "" {
		errs = append(errs, field.Required(rp.Child("resource"), "resource is required to be set"))
	} else if msgs := validation.IsDNS1035Label(r); len(msgs) > 0 {
		errs = append(errs, field.Invalid(rp.Child("resource"), r, strings.Join(msgs, ",")))
	}
	if g := svm.Spec.Resource.Group; g != "" {
		if msgs := validation.IsDNS1123Subdomain(g); len(msgs) > 0 {
			errs = append(errs, field.Invalid(rp.Child("group"), g, strings.Join(msgs, ",")))
		}
	}
	return errs
}

func validateSVMStatusUpdate(svm, old *storagemigrationv1.StorageVersionMigration) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("status")
	rvp := sp.Child("resourceVersion")
	if rv := svm.Status.ResourceVersion; rv != "" {
		// Only that it is a well-formed resource version, as upstream.
		if _, err := resourceversion.CompareResourceVersion(rv, rv); err != nil {
			errs = append(errs, field.Invalid(rvp, rv, err.Error()))
		}
	}
	errs = append(errs, metav1validation.ValidateConditions(svm.Status.Conditions, sp.Child("conditions"))...)
	if old.Status.ResourceVersion != "" && old.Status.ResourceVersion != svm.Status.ResourceVersion {
		errs = append(errs, field.Invalid(rvp, svm.Status.ResourceVersion, "field is immutable"))
	}
	cp := sp.Child("conditions")
	succeeded, failed := svmIs(svm, storagemigrationv1.MigrationSucceeded), svmIs(svm, storagemigrationv1.MigrationFailed)
	if succeeded && failed {
		errs = append(errs, field.Invalid(cp, svm.Status.Conditions, "Both success and failed conditions cannot be true at the same time"))
	}
	if svmIs(old, storagemigrationv1.MigrationSucceeded) && !succeeded {
		errs = append(errs, field.Invalid(cp, svm.Status.Conditions, "Success condition cannot be set to false once it is true"))
	}
	if svmIs(old, storagemigrationv1.MigrationFailed) && !failed {
		errs = append(errs, field.Invalid(cp, svm.Status.Conditions, "Failed condition cannot be set to false once it is true"))
	}
	return errs
}

func svmIs(svm *storagemigrationv1.StorageVersionMigration, t storagemigrationv1.MigrationConditionType) bool {
	c := meta.FindStatusCondition(svm.Status.Conditions, string(t))
	return c != nil && c.Status == metav1.ConditionTrue
}
