package admissionregistration

import (
	"fmt"
	"net/url"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rules shared by both kinds of webhook configuration. A webhook of either
// kind is viewed through the fields they have in common.

type webhook struct {
	name                    string
	clientConfig            *admissionv1.WebhookClientConfig
	rules                   []admissionv1.RuleWithOperations
	failurePolicy           **admissionv1.FailurePolicyType
	matchPolicy             **admissionv1.MatchPolicyType
	namespaceSelector       **metav1.LabelSelector
	objectSelector          **metav1.LabelSelector
	sideEffects             *admissionv1.SideEffectClass
	timeoutSeconds          **int32
	admissionReviewVersions []string
	matchConditions         []admissionv1.MatchCondition
}

func ptr[T any](v T) *T { return &v }

func defaultWebhook(w webhook) {
	if *w.failurePolicy == nil {
		*w.failurePolicy = ptr(admissionv1.Fail)
	}
	if *w.matchPolicy == nil {
		*w.matchPolicy = ptr(admissionv1.Equivalent)
	}
	if *w.namespaceSelector == nil {
		*w.namespaceSelector = &metav1.LabelSelector{}
	}
	if *w.objectSelector == nil {
		*w.objectSelector = &metav1.LabelSelector{}
	}
	if *w.timeoutSeconds == nil {
		*w.timeoutSeconds = ptr(int32(10))
	}
	for i := range w.rules {
		if w.rules[i].Scope == nil {
			w.rules[i].Scope = ptr(admissionv1.AllScopes)
		}
	}
	if s := w.clientConfig.Service; s != nil && s.Port == nil {
		s.Port = ptr(int32(443))
	}
}

var (
	failurePolicies        = []string{string(admissionv1.Fail), string(admissionv1.Ignore)}
	matchPolicies          = []string{string(admissionv1.Equivalent), string(admissionv1.Exact)}
	noSideEffectClasses    = []string{string(admissionv1.SideEffectClassNone), string(admissionv1.SideEffectClassNoneOnDryRun)}
	operations             = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}
	scopes                 = []string{"*", string(admissionv1.ClusterScope), string(admissionv1.NamespacedScope)}
	acceptedReviewVersions = []string{"v1", "v1beta1"}
)

func has(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// validateWebhooks checks each webhook and that their names are unique.
func validateWebhooks(hooks []webhook, validateExtra func(i int, p *field.Path) field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, w := range hooks {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(w, p)...)
		if validateExtra != nil {
			errs = append(errs, validateExtra(i, p)...)
		}
		errs = append(errs, validateReviewVersions(w.admissionReviewVersions, p.Child("admissionReviewVersions"))...)
		if w.name != "" {
			if names[w.name] {
				errs = append(errs, field.Duplicate(p.Child("name"), w.name))
			}
			names[w.name] = true
		}
	}
	return errs
}

func validateWebhook(w webhook, p *field.Path) field.ErrorList {
	errs := validation.IsFullyQualifiedName(p.Child("name"), w.name)
	for i := range w.rules {
		errs = append(errs, validateRule(&w.rules[i], p.Child("rules").Index(i))...)
	}
	if fp := *w.failurePolicy; fp != nil && !has(failurePolicies, string(*fp)) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *fp, failurePolicies))
	}
	if mp := *w.matchPolicy; mp != nil && !has(matchPolicies, string(*mp)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *mp, matchPolicies))
	}
	switch {
	case w.sideEffects == nil:
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of "+strings.Join(noSideEffectClasses, ", ")))
	case !has(noSideEffectClasses, string(*w.sideEffects)):
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *w.sideEffects, noSideEffectClasses))
	}
	if t := *w.timeoutSeconds; t != nil && (*t > 30 || *t < 1) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	if s := *w.namespaceSelector; s != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if s := *w.objectSelector; s != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	cc := w.clientConfig
	cp := p.Child("clientConfig")
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(cp, "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, validateWebhookURL(cp.Child("url"), *cc.URL)...)
	default:
		errs = append(errs, validateWebhookService(cp.Child("service"), cc.Service)...)
	}
	if len(w.matchConditions) == 0 {
		return errs
	}
	return append(errs, newCELCompiler(false).matchConditions(w.matchConditions, p.Child("matchConditions"))...)
}

func validateRule(r *admissionv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	op := p.Child("operations")
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(op, ""))
	}
	if len(r.Operations) > 1 {
		for _, o := range r.Operations {
			if o == admissionv1.OperationAll {
				errs = append(errs, field.Invalid(op, r.Operations, "if '*' is present, must not specify other operations"))
				break
			}
		}
	}
	for i, o := range r.Operations {
		if !has(operations, string(o)) {
			errs = append(errs, field.NotSupported(op.Index(i), o, operations))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && has(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && has(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, p.Child("resources"))...)
	if r.Scope != nil && !has(scopes, string(*r.Scope)) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, scopes))
	}
	return errs
}

// validateResources checks resource names with their wildcard forms:
// "*", "*/*", "pods/*", "*/status".
func validateResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	withWildcardSub := map[string]bool{} // x/*
	withWildcardRes := map[string]bool{} // */x
	doubleWildcard, singleWildcard, plainResource := false, false, false
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		if rs == "*/*" {
			doubleWildcard = true
		}
		if rs == "*" {
			singleWildcard = true
		}
		res, sub, found := strings.Cut(rs, "/")
		if !found {
			plainResource = rs != "*"
			continue
		}
		if withWildcardSub[res] {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if withWildcardRes[sub] {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			withWildcardSub[res] = true
		}
		if res == "*" {
			withWildcardRes[sub] = true
		}
	}
	if len(resources) > 1 && doubleWildcard {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if singleWildcard && plainResource {
		errs = append(errs, field.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

func validateReviewVersions(versions []string, p *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of "+strings.Join(acceptedReviewVersions, ", "))}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	accepted := false
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
		accepted = accepted || has(acceptedReviewVersions, v)
	}
	if !accepted {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of "+strings.Join(acceptedReviewVersions, ", ")))
	}
	return errs
}

const urlForm = "; desired format: https://host[/path]"

// validateWebhookURL: an https URL with a host and no user, query or
// fragment.
func validateWebhookURL(p *field.Path, raw string) field.ErrorList {
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Required(p, "url must be a valid URL: "+err.Error()+urlForm)}
	}
	var errs field.ErrorList
	if u.Scheme != "https" {
		errs = append(errs, field.Invalid(p, u.Scheme, "'https' is the only allowed URL scheme"+urlForm))
	}
	if u.Host == "" {
		errs = append(errs, field.Invalid(p, u.Host, "host must be specified"+urlForm))
	}
	if u.User != nil {
		errs = append(errs, field.Invalid(p, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		errs = append(errs, field.Invalid(p, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		errs = append(errs, field.Invalid(p, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return errs
}

func validateWebhookService(p *field.Path, s *admissionv1.ServiceReference) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "service name is required"))
	}
	if s.Namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), "service namespace is required"))
	}
	port := int32(443)
	if s.Port != nil {
		port = *s.Port
	}
	if msgs := validation.IsValidPortNum(int(port)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("port"), port, "port is not valid: "+strings.Join(msgs, ", ")))
	}
	if s.Path == nil {
		return errs
	}
	path := *s.Path
	pp := p.Child("path")
	if path == "/" || path == "" {
		return errs
	}
	if path == "//" {
		return append(errs, field.Invalid(pp, path, "segment[0] may not be empty"))
	}
	if !strings.HasPrefix(path, "/") {
		errs = append(errs, field.Invalid(pp, path, "must start with a '/'"))
	}
	check := strings.TrimSuffix(path[1:], "/")
	for i, seg := range strings.Split(check, "/") {
		if seg == "" {
			errs = append(errs, field.Invalid(pp, path, fmt.Sprintf("segment[%d] may not be empty", i)))
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(seg) {
			errs = append(errs, field.Invalid(pp, path, fmt.Sprintf("segment[%d]: %v", i, msg)))
		}
	}
	return errs
}

const maxMatchConditions = 64

func validateMatchConditions(conds []admissionv1.MatchCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(conds), maxMatchConditions))
	}
	names := map[string]bool{}
	for i, c := range conds {
		np := p.Index(i).Child("name")
		if c.Name == "" {
			errs = append(errs, field.Required(np, ""))
		} else {
			for _, msg := range validation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(np, c.Name, msg))
			}
			if names[c.Name] {
				errs = append(errs, field.Duplicate(np, c.Name))
			}
			names[c.Name] = true
		}
		if c.Expression == "" {
			errs = append(errs, field.Required(p.Index(i).Child("expression"), ""))
		}
	}
	return errs
}
