package flowcontrol

import (
	"context"
	"fmt"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

// DefaultMatchingPrecedence is a FlowSchema's matchingPrecedence when unset.
const DefaultMatchingPrecedence int32 = 1000

func flowSchemas() registry.Resource {
	return registry.Resource{
		Kind:             flowcontrolv1.SchemeGroupVersion.WithKind("FlowSchema"),
		Plural:           "flowschemas",
		Singular:         "flowschema",
		Subresources:     []string{"status"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { DefaultFlowSchema(obj.(*flowcontrolv1.FlowSchema)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*flowcontrolv1.FlowSchema).Status = flowcontrolv1.FlowSchemaStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList { return validateFlowSchema(obj.(*flowcontrolv1.FlowSchema)) },
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				return validateFlowSchemaStatus(&obj.(*flowcontrolv1.FlowSchema).Status)
			},
		},
	}
}

// DefaultFlowSchema sets fs's unset fields to upstream's defaults.
func DefaultFlowSchema(fs *flowcontrolv1.FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = DefaultMatchingPrecedence
	}
}

var (
	distinguisherMethods = []string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}
	// ruleVerbs are the verbs a rule may name besides "*" (sorted).
	ruleVerbs    = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
	subjectKinds = []string{string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}
)

func validateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	spec := field.NewPath("spec")
	errs := validateFlowSchemaSpec(fs.Name, &fs.Spec, spec)
	if mandatory, ok := mandatoryFlowSchemas()[fs.Name]; ok && !equality.Semantic.DeepEqual(fs.Spec, mandatory.Spec) {
		errs = append(errs, field.Invalid(spec, fs.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
	}
	return append(errs, validateFlowSchemaStatus(&fs.Status)...)
}

func validateFlowSchemaSpec(name string, spec *flowcontrolv1.FlowSchemaSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	precedence := path.Child("matchingPrecedence")
	switch p := spec.MatchingPrecedence; {
	case p <= 0:
		errs = append(errs, field.Invalid(precedence, p, "must be a positive value"))
	case p > flowcontrolv1.FlowSchemaMaxMatchingPrecedence:
		errs = append(errs, field.Invalid(precedence, p, fmt.Sprintf("must not be greater than %v", flowcontrolv1.FlowSchemaMaxMatchingPrecedence)))
	case p == 1 && name != flowcontrolv1.FlowSchemaNameExempt:
		errs = append(errs, field.Invalid(precedence, p, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if dm := spec.DistinguisherMethod; dm != nil && !slices.Contains(distinguisherMethods, string(dm.Type)) {
		// Upstream shows the method as its internal type, without JSON names.
		shown := struct {
			Type flowcontrolv1.FlowDistinguisherMethodType
		}{dm.Type}
		errs = append(errs, field.NotSupported(path.Child("distinguisherMethod", "type"), shown, distinguisherMethods))
	}
	plName := path.Child("priorityLevelConfiguration", "name")
	if n := spec.PriorityLevelConfiguration.Name; n == "" {
		errs = append(errs, field.Required(plName, "must reference a priority level"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(n, false) {
			errs = append(errs, field.Invalid(plName, n, msg))
		}
	}
	for i := range spec.Rules {
		errs = append(errs, validateRule(&spec.Rules[i], path.Child("rules").Index(i))...)
	}
	return errs
}

func validateRule(rule *flowcontrolv1.PolicyRulesWithSubjects, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(path.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := range rule.Subjects {
		errs = append(errs, validateSubject(&rule.Subjects[i], path.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range rule.ResourceRules {
		errs = append(errs, validateResourceRule(&rule.ResourceRules[i], path.Child("resourceRules").Index(i))...)
	}
	for i := range rule.NonResourceRules {
		errs = append(errs, validateNonResourceRule(&rule.NonResourceRules[i], path.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

// validateSubject checks that a subject fills in exactly the member its kind names.
func validateSubject(s *flowcontrolv1.Subject, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	kind := s.Kind
	switch kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		errs = validateServiceAccountSubject(s.ServiceAccount, path.Child("serviceAccount"))
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(path.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(path.Child("user", "name"), ""))
		}
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(path.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(path.Child("group", "name"), ""))
		}
	default:
		return field.ErrorList{field.NotSupported(path.Child("kind"), kind, subjectKinds)}
	}
	if kind != flowcontrolv1.SubjectKindServiceAccount && s.ServiceAccount != nil {
		errs = append(errs, field.Forbidden(path.Child("serviceAccount"), "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"))
	}
	if kind != flowcontrolv1.SubjectKindUser && s.User != nil {
		errs = append(errs, field.Forbidden(path.Child("user"), "user is forbidden when subject kind is not 'User'"))
	}
	if kind != flowcontrolv1.SubjectKindGroup && s.Group != nil {
		errs = append(errs, field.Forbidden(path.Child("group"), "group is forbidden when subject kind is not 'Group'"))
	}
	return errs
}

func validateServiceAccountSubject(sa *flowcontrolv1.ServiceAccountSubject, path *field.Path) field.ErrorList {
	if sa == nil {
		return field.ErrorList{field.Required(path, "serviceAccount is required when subject kind is 'ServiceAccount'")}
	}
	var errs field.ErrorList
	if sa.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else if sa.Name != flowcontrolv1.NameAll {
		for _, msg := range apivalidation.ValidateServiceAccountName(sa.Name, false) {
			errs = append(errs, field.Invalid(path.Child("name"), sa.Name, msg))
		}
	}
	if sa.Namespace == "" {
		errs = append(errs, field.Required(path.Child("namespace"), "must specify namespace for service account"))
	} else {
		for _, msg := range apivalidation.ValidateNamespaceName(sa.Namespace, false) {
			errs = append(errs, field.Invalid(path.Child("namespace"), sa.Namespace, msg))
		}
	}
	return errs
}

// validateVerbs checks a rule's verbs: "*" alone, or known verbs.
func validateVerbs(verbs []string, path *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(path, "verbs must contain at least one value")}
	case slices.Contains(verbs, flowcontrolv1.VerbAll):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(path, verbs, "if '*' is present, must not specify other verbs")}
		}
	default:
		for _, v := range verbs {
			if !slices.Contains(ruleVerbs, v) {
				return field.ErrorList{field.NotSupported(path, verbs, ruleVerbs)}
			}
		}
	}
	return nil
}

// nsErrIntro starts the message about a rule's invalid namespace.
const nsErrIntro = "each member of this list must be '*' or a DNS-1123 label; "

func validateResourceRule(rule *flowcontrolv1.ResourcePolicyRule, path *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, path.Child("verbs"))
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(path.Child("apiGroups"), "resource rules must supply at least one api group"))
	} else if len(rule.APIGroups) > 1 && slices.Contains(rule.APIGroups, flowcontrolv1.APIGroupAll) {
		errs = append(errs, field.Invalid(path.Child("apiGroups"), rule.APIGroups, "if '*' is present, must not specify other api groups"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(path.Child("resources"), "resource rules must supply at least one resource"))
	} else if len(rule.Resources) > 1 && slices.Contains(rule.Resources, flowcontrolv1.ResourceAll) {
		errs = append(errs, field.Invalid(path.Child("resources"), rule.Resources, "if '*' is present, must not specify other resources"))
	}
	namespaces := path.Child("namespaces")
	switch {
	case len(rule.Namespaces) == 0 && !rule.ClusterScope:
		errs = append(errs, field.Required(namespaces, "resource rules that are not cluster scoped must supply at least one namespace"))
	case slices.Contains(rule.Namespaces, flowcontrolv1.NamespaceEvery):
		if len(rule.Namespaces) > 1 {
			errs = append(errs, field.Invalid(namespaces, rule.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, ns := range rule.Namespaces {
			for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
				errs = append(errs, field.Invalid(namespaces.Index(i), ns, nsErrIntro+msg))
			}
		}
	}
	return errs
}

func validateNonResourceRule(rule *flowcontrolv1.NonResourcePolicyRule, path *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, path.Child("verbs"))
	urls := path.Child("nonResourceURLs")
	switch {
	case len(rule.NonResourceURLs) == 0:
		errs = append(errs, field.Required(urls, "nonResourceURLs must contain at least one value"))
	case slices.Contains(rule.NonResourceURLs, flowcontrolv1.NonResourceAll):
		if len(rule.NonResourceURLs) > 1 {
			errs = append(errs, field.Invalid(urls, rule.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, u := range rule.NonResourceURLs {
			if msg := nonResourceURLProblem(u); msg != "" {
				errs = append(errs, field.Invalid(urls.Index(i), u, msg))
			}
		}
	}
	return errs
}

// nonResourceURLProblem says what is wrong with a rule's non-resource URL
// path, or "": it starts with a slash, has no spaces or empty segments, and
// a wildcard only as its whole last segment.
func nonResourceURLProblem(p string) string {
	switch {
	case p == "":
		return "must not be empty"
	case p == "/":
		return ""
	case !strings.HasPrefix(p, "/"):
		return "must start with slash"
	case strings.Contains(p, " "):
		return "must not contain white-space"
	case strings.Contains(p, "//"):
		return "must not contain double slash"
	}
	if n := strings.Count(p, "*"); n > 1 || (n == 1 && !strings.HasSuffix(p, "/*")) {
		return "wildcard can only do suffix matching"
	}
	return ""
}

func validateFlowSchemaStatus(status *flowcontrolv1.FlowSchemaStatus) field.ErrorList {
	return validateConditionTypes(status.Conditions, func(c flowcontrolv1.FlowSchemaCondition) flowcontrolv1.FlowSchemaConditionType { return c.Type })
}

// validateConditionTypes checks that a status's conditions have distinct,
// non-empty types.
func validateConditionTypes[C any, T ~string](conditions []C, typeOf func(C) T) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("status", "conditions")
	seen := map[T]bool{}
	for i, c := range conditions {
		t := typeOf(c)
		if seen[t] {
			errs = append(errs, field.Duplicate(path.Index(i).Child("type"), t))
		}
		seen[t] = true
		if t == "" {
			errs = append(errs, field.Required(path.Index(i).Child("type"), ""))
		}
	}
	return errs
}
