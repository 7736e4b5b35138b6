package customresource

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilversion "k8s.io/apimachinery/pkg/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"

	"plainkube.dev/plainkube/internal/apiserver/custom"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/webhook"
)

// Options are what New needs besides the CRD.
type Options struct {
	// Webhooks calls conversion webhooks (nil: a client that cannot
	// reach webhooks named by Service).
	Webhooks *webhook.Clients
}

// New describes crd for the API server. The CRD must have accepted names
// (status.acceptedNames.plural and kind).
func New(crd *apiextensionsv1.CustomResourceDefinition, opts Options) (*custom.Resource, error) {
	names := crd.Status.AcceptedNames
	if names.Plural == "" || names.Kind == "" {
		return nil, fmt.Errorf("CustomResourceDefinition %s has no accepted names", crd.Name)
	}
	if names.Singular == "" {
		names.Singular = strings.ToLower(names.Kind)
	}
	if names.ListKind == "" {
		names.ListKind = names.Kind + "List"
	}
	storageVersion, err := apihelpers.GetCRDStorageVersion(crd)
	if err != nil {
		return nil, err
	}
	out := &custom.Resource{
		UID: crd.UID, Group: crd.Spec.Group, Plural: names.Plural, StorageVersion: storageVersion,
		Established:           apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established),
		Terminating:           crd.DeletionTimestamp != nil || apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating),
		PreserveUnknownFields: crd.Spec.PreserveUnknownFields,
	}
	if c := crd.Spec.Conversion; c != nil && c.Strategy == apiextensionsv1.WebhookConverter {
		conv, err := newWebhookConverter(crd, opts.Webhooks)
		if err != nil {
			return nil, err
		}
		out.Convert = conv.convert
	}
	for _, v := range crd.Spec.Versions {
		ver, err := newVersion(crd, &v, names)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		out.Versions = append(out.Versions, *ver)
	}
	return out, nil
}

// version is one version's compiled schema and rules.
type version struct {
	kind             schema.GroupVersionKind
	namespaced       bool
	structural       *structuralschema.Structural
	validator        apiservervalidation.SchemaValidator
	statusValidator  apiservervalidation.SchemaValidator
	cel              *cel.Validator
	scale            *apiextensionsv1.CustomResourceSubresourceScale
	preserveUnknown  bool
	selectableFields []selectableField
}

func newVersion(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion, names apiextensionsv1.CustomResourceDefinitionNames) (*custom.Version, error) {
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}
	ver := &version{kind: gvk, namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, preserveUnknown: crd.Spec.PreserveUnknownFields}

	var internalSchema *apiextensions.JSONSchemaProps
	if val, err := apihelpers.GetSchemaForVersion(crd, v.Name); err != nil {
		return nil, err
	} else if val != nil {
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
			return nil, fmt.Errorf("converting the schema: %w", err)
		}
		internalSchema = internal.OpenAPIV3Schema
	}
	if internalSchema != nil {
		s, err := structuralschema.NewStructural(internalSchema)
		if err != nil && !crd.Spec.PreserveUnknownFields {
			return nil, fmt.Errorf("the schema is not structural: %w", err)
		}
		if s != nil {
			s = s.DeepCopy()
			if !crd.Spec.PreserveUnknownFields {
				if err := structuraldefaulting.PruneDefaults(s); err != nil {
					return nil, fmt.Errorf("pruning defaults: %w", err)
				}
			}
		}
		ver.structural = s
	}
	var err error
	if ver.validator, _, err = apiservervalidation.NewSchemaValidator(internalSchema); err != nil {
		return nil, err
	}
	subresources, err := apihelpers.GetSubresourcesForVersion(crd, v.Name)
	if err != nil {
		return nil, err
	}
	res := registry.Resource{
		Kind: gvk, Plural: names.Plural, Singular: names.Singular, ShortNames: names.ShortNames,
		Categories: names.Categories, Namespaced: ver.namespaced, TracksGeneration: true,
	}
	if subresources != nil && subresources.Status != nil {
		res.Subresources = append(res.Subresources, "status")
		if internalSchema != nil && internalSchema.Properties != nil {
			if st, ok := internalSchema.Properties["status"]; ok {
				if ver.statusValidator, _, err = apiservervalidation.NewSchemaValidator(&st); err != nil {
					return nil, err
				}
			}
		}
	}
	var scale *custom.ScalePaths
	if subresources != nil && subresources.Scale != nil {
		res.Subresources = append(res.Subresources, "scale")
		ver.scale = subresources.Scale
		scale = &custom.ScalePaths{SpecReplicas: subresources.Scale.SpecReplicasPath, StatusReplicas: subresources.Scale.StatusReplicasPath}
		if p := subresources.Scale.LabelSelectorPath; p != nil {
			scale.LabelSelector = *p
		}
	}
	if ver.structural != nil {
		ver.cel = cel.NewValidator(ver.structural, true, celconfig.PerCallLimit)
	}
	ver.selectableFields = prepareSelectableFields(v.SelectableFields)
	table, err := newTable(v.AdditionalPrinterColumns)
	if err != nil {
		return nil, err
	}
	hasStatus := subresources != nil && subresources.Status != nil
	res.Strategy = registry.Strategy{
		Default: func(obj runtime.Object) {
			if ver.structural != nil {
				structuraldefaulting.Default(obj.(*unstructured.Unstructured).Object, ver.structural)
			}
		},
		PrepareForCreate: func(_ context.Context, obj runtime.Object) {
			if hasStatus {
				delete(obj.(*unstructured.Unstructured).Object, "status")
			}
		},
		Validate:           func(obj runtime.Object) field.ErrorList { return ver.validate(obj.(*unstructured.Unstructured)) },
		ValidateUpdateOnly: true,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return ver.validateUpdate(obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured))
		},
		ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
			return ver.validateStatusUpdate(obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured))
		},
		Table: table,
	}
	if len(ver.selectableFields) > 0 {
		res.Strategy.SelectableFields = ver.fieldSet
	}
	out := &custom.Version{
		Resource: res, ListKind: names.ListKind, Served: v.Served, Scale: scale,
		Coerce: ver.coerce,
	}
	if ver.structural != nil {
		out.Schema = ver.structural.ToKubeOpenAPI()
	}
	out.SchemaV2 = openAPIV2Definition(crd, v.Name, gvk)
	if v.Deprecated {
		if v.DeprecationWarning != nil {
			out.Warning = *v.DeprecationWarning
		} else {
			out.Warning = defaultDeprecationWarning(v.Name, crd.Spec)
		}
	}
	return out, nil
}

// coerce is upstream's unstructuredSchemaCoercer: what decoding into a Go
// type would do to the object.
func (ver *version) coerce(u *unstructured.Unstructured, opts custom.CoerceOptions) ([]string, error) {
	kind, foundKind, err := unstructured.NestedString(u.Object, "kind")
	if err != nil {
		return nil, err
	}
	apiVersion, foundAPIVersion, err := unstructured.NestedString(u.Object, "apiVersion")
	if err != nil {
		return nil, err
	}
	objectMeta, foundObjectMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		DropMalformedFields: opts.FromStorage, ReturnUnknownFieldPaths: opts.ReportUnknown,
	})
	if err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	if gv.Group == ver.kind.Group && kind == ver.kind.Kind && ver.structural != nil {
		if !ver.preserveUnknown {
			unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, ver.structural, true,
				structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: opts.ReportUnknown})...)
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, ver.structural)
		}
		ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, ver.structural, false, schemaobjectmeta.CoerceOptions{
			DropInvalidFields: opts.FromStorage, ReturnUnknownFieldPaths: opts.ReportUnknown,
		})
		if ferr != nil {
			return nil, ferr
		}
		unknown = append(unknown, paths...)
		if opts.FromStorage && objectMeta != nil && objectMeta.Generation == 0 {
			objectMeta.Generation = 1
		}
	}
	if foundKind {
		u.SetKind(kind)
	}
	if foundAPIVersion {
		u.SetAPIVersion(apiVersion)
	}
	if foundObjectMeta && objectMeta != nil {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

// ---- validation (upstream's customResourceStrategy and validator) ----

func (ver *version) validateTypeMeta(u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if u.GetKind() != ver.kind.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), fmt.Sprintf("must be %v", ver.kind.Kind)))
	}
	if want := ver.kind.Group + "/" + ver.kind.Version; u.GetAPIVersion() != want {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), fmt.Sprintf("must be %v", want)))
	}
	return errs
}

func (ver *version) validate(u *unstructured.Unstructured) field.ErrorList {
	if errs := ver.validateTypeMeta(u); len(errs) > 0 {
		return errs
	}
	ctx := context.Background()
	var errs field.ErrorList
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.Object, ver.validator)...)
	errs = append(errs, ver.validateScaleSpec(u)...)
	errs = append(errs, ver.validateScaleStatus(u)...)
	if ver.structural != nil {
		errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, ver.structural, false)...)
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, ver.structural, u.Object)...)
	}
	if ver.cel != nil {
		if blocked, err := hasBlockingErr(errs); blocked {
			errs = append(errs, err)
		} else {
			celErrs, _ := ver.cel.Validate(ctx, nil, ver.structural, u.Object, nil, celconfig.RuntimeCELCostBudget)
			errs = append(errs, celErrs...)
		}
	}
	return errs
}

func (ver *version) ratcheting(u, old map[string]interface{}) (*common.CorrelatedObject, []apiservervalidation.ValidationOption, []cel.Option) {
	if ver.structural == nil {
		return nil, nil, nil
	}
	c := common.NewCorrelatedObject(u, old, &model.Structural{Structural: ver.structural})
	return c, []apiservervalidation.ValidationOption{apiservervalidation.WithRatcheting(c)}, []cel.Option{cel.WithRatcheting(c)}
}

func (ver *version) validateUpdate(u, old *unstructured.Unstructured) field.ErrorList {
	if errs := ver.validateTypeMeta(u); len(errs) > 0 {
		return errs
	}
	ctx := context.Background()
	_, opts, celOpts := ver.ratcheting(u.Object, old.Object)
	var errs field.ErrorList
	errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, u.Object, old.Object, ver.validator, opts...)...)
	errs = append(errs, ver.validateScaleSpec(u)...)
	errs = append(errs, ver.validateScaleStatus(u)...)
	if ver.structural != nil {
		errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, ver.structural, false)...)
		if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, ver.structural, old.Object); len(oldErrs) == 0 {
			errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, ver.structural, u.Object)...)
		}
	}
	if ver.cel != nil {
		if blocked, err := hasBlockingErr(errs); blocked {
			errs = append(errs, err)
		} else {
			celErrs, _ := ver.cel.Validate(ctx, nil, ver.structural, u.Object, old.Object, celconfig.RuntimeCELCostBudget, celOpts...)
			errs = append(errs, celErrs...)
		}
	}
	return errs
}

func (ver *version) validateStatusUpdate(u, old *unstructured.Unstructured) field.ErrorList {
	if errs := ver.validateTypeMeta(u); len(errs) > 0 {
		return errs
	}
	ctx := context.Background()
	var errs field.ErrorList
	var opts []apiservervalidation.ValidationOption
	var celOpts []cel.Option
	if ver.structural != nil {
		c := common.NewCorrelatedObject(u.Object, old.Object, &model.Structural{Structural: ver.structural})
		opts = []apiservervalidation.ValidationOption{apiservervalidation.WithRatcheting(c.Key("status"))}
		celOpts = []cel.Option{cel.WithRatcheting(c)}
	}
	if status, ok := u.Object["status"]; ok && ver.statusValidator != nil {
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(field.NewPath("status"), status, old.Object["status"], ver.statusValidator, opts...)...)
	}
	errs = append(errs, ver.validateScaleStatus(u)...)
	if ver.structural != nil {
		if newErrs := structurallisttype.ValidateListSetsAndMaps(nil, ver.structural, u.Object); len(newErrs) > 0 {
			if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, ver.structural, old.Object); len(oldErrs) == 0 {
				errs = append(errs, newErrs...)
			}
		}
	}
	if ver.cel != nil {
		if blocked, err := hasBlockingErr(errs); blocked {
			errs = append(errs, err)
		} else {
			celErrs, _ := ver.cel.Validate(ctx, nil, ver.structural, u.Object, old.Object, celconfig.RuntimeCELCostBudget, celOpts...)
			errs = append(errs, celErrs...)
		}
	}
	return errs
}

func (ver *version) validateScaleSpec(u *unstructured.Unstructured) field.ErrorList {
	if ver.scale == nil {
		return nil
	}
	p := ver.scale.SpecReplicasPath
	replicas, _, err := unstructured.NestedInt64(u.Object, strings.Split(strings.TrimPrefix(p, "."), ".")...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(p), replicas, err.Error())}
	case replicas < 0:
		return field.ErrorList{field.Invalid(field.NewPath(p), replicas, "should be a non-negative integer")}
	case replicas > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(p), replicas, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

func (ver *version) validateScaleStatus(u *unstructured.Unstructured) field.ErrorList {
	if ver.scale == nil {
		return nil
	}
	var errs field.ErrorList
	p := ver.scale.StatusReplicasPath
	replicas, _, err := unstructured.NestedInt64(u.Object, strings.Split(strings.TrimPrefix(p, "."), ".")...)
	switch {
	case err != nil:
		errs = append(errs, field.Invalid(field.NewPath(p), replicas, err.Error()))
	case replicas < 0:
		errs = append(errs, field.Invalid(field.NewPath(p), replicas, "should be a non-negative integer"))
	case replicas > math.MaxInt32:
		errs = append(errs, field.Invalid(field.NewPath(p), replicas, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32)))
	}
	if lp := ver.scale.LabelSelectorPath; lp != nil {
		sel, _, err := unstructured.NestedString(u.Object, strings.Split(strings.TrimPrefix(*lp, "."), ".")...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*lp), sel, err.Error()))
		}
	}
	return errs
}

// hasBlockingErr reports errors after which CEL rules are not run.
func hasBlockingErr(errs field.ErrorList) (bool, *field.Error) {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return false, nil
}

// defaultDeprecationWarning is upstream's text for a deprecated version
// without its own warning.
func defaultDeprecationWarning(deprecated string, spec apiextensionsv1.CustomResourceDefinitionSpec) string {
	msg := fmt.Sprintf("%s/%s %s is deprecated", spec.Group, deprecated, spec.Names.Kind)
	var newer []string
	for _, v := range spec.Versions {
		if v.Served && !v.Deprecated && utilversion.CompareKubeAwareVersionStrings(deprecated, v.Name) < 0 {
			newer = append(newer, v.Name)
		}
	}
	if len(newer) == 0 {
		return msg
	}
	sort.Slice(newer, func(i, j int) bool { return utilversion.CompareKubeAwareVersionStrings(newer[i], newer[j]) > 0 })
	return msg + fmt.Sprintf("; use %s/%s %s", spec.Group, newer[0], spec.Names.Kind)
}

// openAPIV2Definition is the kind's definition in /openapi/v2 as upstream
// publishes it: built by apiextensions-apiserver's OpenAPI builder, which
// turns the structural schema into what Swagger 2.0 and kubectl's
// client-side validation understand (a kind that keeps unknown fields is a
// bare object). Nil if it cannot be built.
func openAPIV2Definition(crd *apiextensionsv1.CustomResourceDefinition, version string, gvk schema.GroupVersionKind) *spec.Schema {
	sw, err := builder.BuildOpenAPIV2(crd, version, builder.Options{V2: true, IncludeSelectableFields: true})
	if err != nil {
		return nil
	}
	d, ok := sw.Definitions[openapiutil.ToRESTFriendlyName(gvk.Group+"/"+gvk.Version+"/"+gvk.Kind)]
	if !ok {
		return nil
	}
	return &d
}
