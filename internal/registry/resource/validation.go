package resource

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"plainkube.dev/plainkube/internal/api/podspec"
)

// The limits upstream keeps in its internal API package and not in k8s.io/api.
const (
	maxDeviceConfigs          = 32 // a class's or a claim's config entries
	maxDeviceConstraints      = 32
	maxFirstAvailable         = 8
	maxDerivedAttributes      = 32 // per request or subrequest
	maxAllocatedDeviceDataLen = 10 * 1024
	maxInterfaceNameLen       = 256
	maxHardwareAddressLen     = 128
	maxNetworkIPs             = 16
)

const requestRefMsg = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"

// checkSize reports a list longer than max (max < 0: no limit).
func checkSize(n, max int, p *field.Path) field.ErrorList {
	if max >= 0 && n > max {
		return field.ErrorList{field.TooMany(p, n, max)}
	}
	return nil
}

// eachItem validates every item of a list of at most max items; a longer
// list gets the one TooMany error, as upstream (which then skips the items).
func eachItem[T any](items []T, max int, p *field.Path, check func(T, *field.Path) field.ErrorList) field.ErrorList {
	if errs := checkSize(len(items), max, p); errs != nil {
		return errs
	}
	var errs field.ErrorList
	for i, item := range items {
		errs = append(errs, check(item, p.Index(i))...)
	}
	return errs
}

// eachUnique is eachItem for a list whose items are distinct by key.
func eachUnique[T any, K comparable](items []T, max int, p *field.Path, key func(T) K, check func(T, *field.Path) field.ErrorList) field.ErrorList {
	if errs := checkSize(len(items), max, p); errs != nil {
		return errs
	}
	var errs field.ErrorList
	for i, item := range items {
		errs = append(errs, check(item, p.Index(i))...)
	}
	seen := make(map[K]bool, len(items))
	for i, item := range items {
		k := key(item)
		if seen[k] {
			errs = append(errs, field.Duplicate(p.Index(i), k))
		}
		seen[k] = true
	}
	return errs
}

var (
	dnsLabel     = podspec.ValidateDNS1123Label
	dnsSubdomain = podspec.ValidateDNS1123Subdomain
)

func labelValue(value string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(value) {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

var validateDriverName = podspec.ValidateCSIDriverName

// validatePoolName: a pool name is one or more DNS subdomains joined by
// "/", at most 253 characters in all.
func validatePoolName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > resourcev1.PoolNameMaxLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.PoolNameMaxLength))
	}
	for _, part := range strings.Split(name, "/") {
		errs = append(errs, dnsSubdomain(part, p)...)
	}
	return errs
}

func validateNodeName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func validateDeviceClassRef(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return dnsSubdomain(name, p)
}

// validateCIdentifier checks the name part of a qualified name.
func validateCIdentifier(id string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(id) > resourcev1.DeviceMaxIDLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.DeviceMaxIDLength))
	}
	for _, msg := range content.IsCIdentifier(id) {
		errs = append(errs, field.Invalid(p, id, msg))
	}
	return errs
}

// validateQualifiedName checks an attribute or capacity name: a C
// identifier, optionally after a driver-name domain and a "/".
func validateQualifiedName(name string, p *field.Path) field.ErrorList {
	parts := strings.Split(name, "/")
	switch len(parts) {
	case 1:
		return validateCIdentifier(parts[0], p)
	case 2:
		var errs field.ErrorList
		if parts[0] == "" {
			errs = append(errs, field.Invalid(p, "", "the domain must not be empty"))
		} else {
			errs = append(errs, validateDriverName(parts[0], p)...)
		}
		if parts[1] == "" {
			errs = append(errs, field.Invalid(p, "", "the name must not be empty"))
		} else {
			errs = append(errs, validateCIdentifier(parts[1], p)...)
		}
		return errs
	}
	return nil
}

func validateFullyQualifiedName(name string, p *field.Path) field.ErrorList {
	errs := validateQualifiedName(name, p)
	if !strings.Contains(name, "/") {
		errs = append(errs, field.Invalid(p, name, "a fully qualified name must be a domain and a name separated by a slash"))
	}
	return errs
}

// validateCELSelector compiles a selector expression in upstream's DRA
// environment. stored: the expression was accepted before and is not
// compiled again, as upstream's ratcheting.
func validateCELSelector(expression string, stored bool, p *field.Path) field.ErrorList {
	if stored {
		return nil
	}
	_, errs := compileCEL(expression, false, p)
	return errs
}

// compileCEL compiles a selector or (derived) a derived attribute's
// expression with upstream v1.37's default features (consumable capacity
// and list attributes off) and returns its estimated cost.
func compileCEL(expression string, derived bool, p *field.Path) (uint64, field.ErrorList) {
	if len(expression) > resourcev1.CELSelectorExpressionMaxLength {
		return 0, field.ErrorList{field.TooLong(p, "", resourcev1.CELSelectorExpressionMaxLength)}
	}
	env := environment.NewExpressions
	result := dracel.GetCompiler(dracel.Features{}).CompileCELExpression(expression, dracel.Options{EnvType: &env, DerivedAttribute: derived})
	if result.Error != nil {
		var celErr *apiservercel.Error
		if errors.As(result.Error, &celErr) {
			switch celErr.Type {
			case apiservercel.ErrorTypeRequired:
				return 0, field.ErrorList{field.Required(p, celErr.Detail)}
			case apiservercel.ErrorTypeInvalid:
				return 0, field.ErrorList{field.Invalid(p, expression, celErr.Detail)}
			}
		}
		return 0, field.ErrorList{field.InternalError(p, result.Error)}
	}
	limit := uint64(resourcev1.CELSelectorExpressionMaxCost)
	if derived {
		limit = min(limit, resourcev1.DeviceClaimDerivedAttributeCELMaxCost)
	}
	if result.MaxCost > limit {
		return result.MaxCost, field.ErrorList{field.Forbidden(p, "too complex, exceeds cost limit")}
	}
	return result.MaxCost, nil
}

func validateSelectors(selectors []resourcev1.DeviceSelector, stored bool, p *field.Path) field.ErrorList {
	return eachItem(selectors, resourcev1.DeviceSelectorsMaxSize, p, func(s resourcev1.DeviceSelector, p *field.Path) field.ErrorList {
		if s.CEL == nil {
			return field.ErrorList{field.Required(p.Child("cel"), "")}
		}
		return validateCELSelector(s.CEL.Expression, stored, p.Child("cel", "expression"))
	})
}

// validateDeviceConfiguration: an opaque configuration for one driver,
// whose parameters are a JSON object of at most 10 KiB.
func validateDeviceConfiguration(c resourcev1.DeviceConfiguration, stored bool, p *field.Path) field.ErrorList {
	if c.Opaque == nil {
		return field.ErrorList{field.Required(p.Child("opaque"), "")}
	}
	op := p.Child("opaque")
	errs := validateDriverName(c.Opaque.Driver, op.Child("driver"))
	return append(errs, validateRawJSONObject(c.Opaque.Parameters, stored, resourcev1.OpaqueParametersMaxLength, op.Child("parameters"))...)
}

func validateRawJSONObject(raw runtime.RawExtension, stored bool, max int, p *field.Path) field.ErrorList {
	var v any
	switch {
	case len(raw.Raw) == 0:
		return field.ErrorList{field.Required(p, "")}
	case !stored && len(raw.Raw) > max:
		return field.ErrorList{field.TooLong(p, "", max)}
	}
	if err := json.Unmarshal(raw.Raw, &v); err != nil {
		return field.ErrorList{field.Invalid(p, "<value omitted>", fmt.Sprintf("error parsing data as JSON: %v", err.Error()))}
	}
	if v == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	if _, ok := v.(map[string]any); !ok {
		return field.ErrorList{field.Invalid(p, "<value omitted>", "must be a valid JSON object")}
	}
	return nil
}

var (
	taintEffects        = []string{string(resourcev1.DeviceTaintEffectNoExecute), string(resourcev1.DeviceTaintEffectNoSchedule), string(resourcev1.DeviceTaintEffectNone)}
	tolerationOperators = []string{string(resourcev1.DeviceTolerationOpEqual), string(resourcev1.DeviceTolerationOpExists)}
)

// validateDeviceTaint: a label-name key, a label-value value and a known
// effect; oldEffect (nil on create) is accepted unchanged, as upstream.
func validateDeviceTaint(t resourcev1.DeviceTaint, oldEffect *resourcev1.DeviceTaintEffect, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelName(t.Key, p.Child("key"))
	if t.Value != "" {
		errs = append(errs, labelValue(t.Value, p.Child("value"))...)
	}
	if oldEffect == nil || *oldEffect != t.Effect {
		switch {
		case t.Effect == "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		case !slices.Contains(taintEffects, string(t.Effect)):
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
		}
	}
	return errs
}

func validateDeviceToleration(t resourcev1.DeviceToleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Key != "" {
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
	}
	switch t.Operator {
	case resourcev1.DeviceTolerationOpExists:
		if t.Value != "" {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be empty for operator `Exists`"))
		}
	case resourcev1.DeviceTolerationOpEqual:
		errs = append(errs, labelValue(t.Value, p.Child("value"))...)
	case "":
		errs = append(errs, field.Required(p.Child("operator"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, tolerationOperators))
	}
	if t.Effect != "" && !slices.Contains(taintEffects, string(t.Effect)) {
		errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
	}
	return errs
}

func validateTolerations(ts []resourcev1.DeviceToleration, p *field.Path) field.ErrorList {
	return eachItem(ts, -1, p, validateDeviceToleration)
}

// validateBindingConditions: at most four of each kind, label names,
// distinct, the two lists disjoint, and each only with the other.
func validateBindingConditions(conditions, failures []string, p *field.Path) field.ErrorList {
	cp, fp := p.Child("bindingConditions"), p.Child("bindingFailureConditions")
	errs := eachUnique(conditions, resourcev1.BindingConditionsMaxSize, cp, strKey, metav1validation.ValidateLabelName)
	errs = append(errs, eachUnique(failures, resourcev1.BindingFailureConditionsMaxSize, fp, strKey, metav1validation.ValidateLabelName)...)
	for i, c := range failures {
		if slices.Contains(conditions, c) {
			errs = append(errs, field.Invalid(fp.Index(i), c, "bindingFailureConditions must not overlap with bindingConditions"))
		}
	}
	if len(conditions) == 0 && len(failures) > 0 {
		errs = append(errs, field.Invalid(cp, conditions, "bindingConditions are required to use bindingFailureConditions"))
	}
	if len(failures) == 0 && len(conditions) > 0 {
		errs = append(errs, field.Invalid(fp, failures, "bindingFailureConditions are required to use bindingConditions"))
	}
	return errs
}

func strKey(s string) string { return s }

// semver is a version as semver.org 2.0.0 spells it.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
	`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)

// validateUID checks a share ID: a UUID in its normalized, lowercase form.
func validateUID(uid string, p *field.Path) field.ErrorList {
	if err := uuid.Validate(uid); err != nil {
		return field.ErrorList{field.Invalid(p, uid, fmt.Sprintf("error validating uid: %v", err))}
	}
	if len(uid) != 36 || uid != strings.ToLower(uid) {
		return field.ErrorList{field.Invalid(p, uid, "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters")}
	}
	return nil
}
