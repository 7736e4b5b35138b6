package admissionregistration

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/util/jsonpath"
)

// Rules shared by the admission policies (validating and mutating) and
// their bindings: upstream's defaults, field paths and messages. CEL
// expressions are compiled with the Kubernetes CEL environment
// (k8s.io/apiserver's admission CEL libraries), so a policy that does not
// compile is refused when it is written.

func defaultMatchResources(m *admissionv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr(admissionv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				rules[i].Scope = ptr(admissionv1.AllScopes)
			}
		}
	}
}

func validateFailurePolicy(fp *admissionv1.FailurePolicyType, p *field.Path) field.ErrorList {
	switch {
	case fp == nil:
		return field.ErrorList{field.Required(p, "")}
	case !has(failurePolicies, string(*fp)):
		return field.ErrorList{field.NotSupported(p, *fp, failurePolicies)}
	}
	return nil
}

func validateParamKind(k admissionv1.ParamKind, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ap := p.Child("apiVersion")
	if k.APIVersion == "" {
		errs = append(errs, field.Required(ap, ""))
	} else if strings.Count(k.APIVersion, "/") > 1 {
		errs = append(errs, field.Invalid(ap, k.APIVersion, "unexpected GroupVersion string: "+k.APIVersion))
	} else {
		group, version, found := strings.Cut(k.APIVersion, "/")
		if !found {
			group, version = "", group
		}
		if group != "" {
			if msgs := validation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(ap, group, strings.Join(msgs, ",")))
			}
		}
		if version == "" {
			errs = append(errs, field.Invalid(ap, k.APIVersion, "version must be specified"))
		} else if msgs := validation.IsDNS1035Label(version); len(msgs) > 0 {
			errs = append(errs, field.Invalid(ap, version, strings.Join(msgs, ",")))
		}
	}
	if k.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else if msgs := validation.IsDNS1035Label(strings.ToLower(k.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("kind"), k.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

// validateMatchConstraints checks a policy's matchConstraints, which must
// name at least one resource rule (the type information of its
// expressions).
func validateMatchConstraints(m *admissionv1.MatchResources, p *field.Path) field.ErrorList {
	if m == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := validateMatchResources(m, p)
	if len(m.ResourceRules) == 0 {
		errs = append(errs, field.Required(p.Child("resourceRules"), ""))
	}
	return errs
}

func validateMatchResources(m *admissionv1.MatchResources, p *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	switch {
	case m.MatchPolicy == nil:
		errs = append(errs, field.Required(p.Child("matchPolicy"), ""))
	case !has(matchPolicies, string(*m.MatchPolicy)):
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *m.MatchPolicy, matchPolicies))
	}
	for _, sel := range []struct {
		name string
		s    *metav1.LabelSelector
	}{{"namespaceSelector", m.NamespaceSelector}, {"objectSelector", m.ObjectSelector}} {
		if sel.s == nil {
			errs = append(errs, field.Required(p.Child(sel.name), ""))
		} else {
			errs = append(errs, metav1validation.ValidateLabelSelector(sel.s, metav1validation.LabelSelectorValidationOptions{}, p.Child(sel.name))...)
		}
	}
	for _, rules := range []struct {
		name  string
		rules []admissionv1.NamedRuleWithOperations
	}{{"resourceRules", m.ResourceRules}, {"excludeResourceRules", m.ExcludeResourceRules}} {
		for i := range rules.rules {
			errs = append(errs, validateNamedRule(&rules.rules[i], p.Child(rules.name).Index(i))...)
		}
	}
	return errs
}

func validateNamedRule(r *admissionv1.NamedRuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, name := range r.ResourceNames {
		rp := p.Child("resourceNames").Index(i)
		for _, msg := range pathSegmentName(name) {
			errs = append(errs, field.Invalid(rp, name, msg))
		}
		if seen[name] {
			errs = append(errs, field.Duplicate(rp, name))
		}
		seen[name] = true
	}
	return append(errs, validateRule(&r.RuleWithOperations, p)...)
}

// pathSegmentName is apimachinery's path segment rule for names.
func pathSegmentName(name string) []string {
	var msgs []string
	if name == "." || name == ".." {
		msgs = append(msgs, fmt.Sprintf("may not be '%s'", name))
	}
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(name, bad) {
			msgs = append(msgs, fmt.Sprintf("may not contain '%s'", bad))
		}
	}
	return msgs
}

func validateParamRef(r *admissionv1.ParamRef, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if r.Name != "" {
		for _, msg := range pathSegmentName(r.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
		if r.Selector != nil {
			errs = append(errs, field.Forbidden(p.Child("name"), `name and selector are mutually exclusive`))
		}
	}
	if r.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(r.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
		if r.Name != "" {
			errs = append(errs, field.Forbidden(p.Child("selector"), `name and selector are mutually exclusive`))
		}
	}
	if r.Name == "" && r.Selector == nil {
		errs = append(errs, field.Required(p, `one of name or selector must be specified`))
	}
	actions := []string{string(admissionv1.DenyAction), string(admissionv1.AllowAction)}
	switch a := r.ParameterNotFoundAction; {
	case a == nil || *a == "":
		errs = append(errs, field.Required(p.Child("parameterNotFoundAction"), ""))
	case !has(actions, string(*a)):
		errs = append(errs, field.NotSupported(p.Child("parameterNotFoundAction"), *a, actions))
	}
	return errs
}

func validatePolicyName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// celCompiler compiles one policy's expressions; variables are stored in
// it as they are compiled so that later expressions may use them.
type celCompiler struct {
	compiler plugincel.Compiler
	// hasParams: the policy has a paramKind.
	hasParams bool
}

func newCELCompiler(hasParams bool) *celCompiler {
	env := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	c, err := plugincel.NewCompositedCompiler(env)
	if err != nil {
		return &celCompiler{compiler: plugincel.NewCompiler(env), hasParams: hasParams}
	}
	return &celCompiler{compiler: c, hasParams: hasParams}
}

// compile compiles one expression and converts a failure to the field error
// upstream gives.
func (c *celCompiler) compile(e plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations, p *field.Path) field.ErrorList {
	opts.HasParams = opts.HasParams || c.hasParams
	res := c.compiler.CompileCELExpression(e, opts, environment.NewExpressions)
	if res.Error == nil {
		return nil
	}
	return field.ErrorList{celFieldError(p, e.GetExpression(), res.Error)}
}

func celFieldError(p *field.Path, expression string, err error) *field.Error {
	var celErr *apiservercel.Error
	if errors.As(err, &celErr) {
		switch celErr.Type {
		case apiservercel.ErrorTypeRequired:
			return field.Required(p, celErr.Detail)
		case apiservercel.ErrorTypeInvalid:
			return field.Invalid(p, expression, celErr.Detail)
		}
		return field.InternalError(p, celErr)
	}
	return field.InternalError(p, fmt.Errorf("unsupported error type: %w", err))
}

var (
	celIdentifier = regexp.MustCompile("^[_a-zA-Z][_a-zA-Z0-9]*$")
	celReserved   = []string{"true", "false", "null", "in", "as", "break", "const", "continue", "else",
		"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
)

func (c *celCompiler) variables(vars []admissionv1.Variable, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, v := range vars {
		vp := p.Index(i)
		if strings.TrimSpace(v.Name) == "" {
			errs = append(errs, field.Required(vp.Child("name"), "name is not specified"))
		} else if !celIdentifier.MatchString(v.Name) || has(celReserved, v.Name) {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, "must be a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
			continue
		}
		variable := &validating.Variable{Name: v.Name, Expression: v.Expression}
		composited, ok := c.compiler.(*plugincel.CompositedCompiler)
		if !ok {
			errs = append(errs, field.InternalError(vp, errors.New("variable composition is not allowed")))
			continue
		}
		res := composited.CompileAndStoreVariable(variable, plugincel.OptionalVariableDeclarations{HasParams: c.hasParams, HasAuthorizer: true}, environment.NewExpressions)
		if res.Error != nil {
			errs = append(errs, celFieldError(vp.Child("expression"), v.Expression, res.Error))
		}
	}
	return errs
}

// matchConditions checks names as webhooks' do and compiles each
// expression (without the policy's variables, as upstream).
func (c *celCompiler) matchConditions(conds []admissionv1.MatchCondition, p *field.Path) field.ErrorList {
	errs := validateMatchConditions(conds, p)
	stateless := &celCompiler{compiler: plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())), hasParams: c.hasParams}
	for i, cond := range conds {
		if strings.TrimSpace(cond.Expression) == "" {
			continue
		}
		errs = append(errs, stateless.compile(&matchconditions.MatchCondition{Expression: strings.TrimSpace(cond.Expression)},
			plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, p.Index(i).Child("expression"))...)
	}
	return errs
}

var (
	validationReasons = []string{string(metav1.StatusReasonForbidden), string(metav1.StatusReasonInvalid), string(metav1.StatusReasonRequestEntityTooLarge)}
	validationActions = []string{string(admissionv1.Audit), string(admissionv1.Deny), string(admissionv1.Warn)}
	newlines          = regexp.MustCompile(`[\n\r]+`)
)

func (c *celCompiler) validation(v *admissionv1.Validation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, c.compile(&validating.ValidationCondition{Expression: v.Expression},
			plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, p.Child("expression"))...)
	}
	if v.MessageExpression != "" && strings.TrimSpace(v.MessageExpression) == "" {
		errs = append(errs, field.Invalid(p.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if v.MessageExpression != "" {
		errs = append(errs, c.compile(&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression},
			plugincel.OptionalVariableDeclarations{}, p.Child("messageExpression"))...)
	}
	msg := strings.TrimSpace(v.Message)
	if v.Message != "" && msg == "" {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must be non-empty if specified"))
	} else if newlines.MatchString(msg) {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must not contain line breaks"))
	}
	if v.Reason != nil && !has(validationReasons, string(*v.Reason)) {
		errs = append(errs, field.NotSupported(p.Child("reason"), *v.Reason, validationReasons))
	}
	return errs
}

const (
	maxAuditAnnotations                     = 20
	maxAuditAnnotationValueExpressionLength = 5 * 1024
)

func (c *celCompiler) auditAnnotations(policyName string, anns []admissionv1.AuditAnnotation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(anns) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(p, anns, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := map[string]bool{}
	for i, a := range anns {
		ap := p.Index(i)
		if policyName != "" {
			for _, msg := range validation.IsQualifiedName(policyName + "/" + a.Key) {
				errs = append(errs, field.Invalid(ap.Child("key"), policyName+"/"+a.Key, msg))
			}
		} else {
			errs = append(errs, field.Invalid(ap.Child("key"), a.Key, "requires metadata.name be non-empty"))
		}
		value := strings.TrimSpace(a.ValueExpression)
		switch {
		case value == "":
			errs = append(errs, field.Required(ap.Child("valueExpression"), "valueExpression is not specified"))
		case len(value) > maxAuditAnnotationValueExpressionLength:
			errs = append(errs, field.Required(ap.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
		default:
			errs = append(errs, c.compile(&validating.AuditAnnotationCondition{ValueExpression: value},
				plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, ap.Child("valueExpression"))...)
		}
		if keys[a.Key] {
			errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
		}
		keys[a.Key] = true
	}
	return errs
}

func (c *celCompiler) mutation(m *admissionv1.Mutation, p *field.Path) field.ErrorList {
	patchTypes := []string{string(admissionv1.PatchTypeApplyConfiguration), string(admissionv1.PatchTypeJSONPatch)}
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true, HasPatchTypes: true}
	var errs field.ErrorList
	switch m.PatchType {
	case "":
		errs = append(errs, field.Required(p.Child("patchType"), ""))
	case admissionv1.PatchTypeJSONPatch:
		if m.JSONPatch == nil {
			errs = append(errs, field.Required(p.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
		} else if e := strings.TrimSpace(m.JSONPatch.Expression); e == "" {
			errs = append(errs, field.Required(p.Child("jsonPatch", "expression"), ""))
		} else {
			errs = append(errs, c.compile(&patch.JSONPatchCondition{Expression: e}, opts, p.Child("jsonPatch", "expression"))...)
		}
		if m.ApplyConfiguration != nil {
			errs = append(errs, field.Invalid(p.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
		}
	case admissionv1.PatchTypeApplyConfiguration:
		if m.ApplyConfiguration == nil {
			errs = append(errs, field.Required(p.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
		} else if e := strings.TrimSpace(m.ApplyConfiguration.Expression); e == "" {
			errs = append(errs, field.Required(p.Child("applyConfiguration", "expression"), ""))
		} else {
			errs = append(errs, c.compile(&patch.ApplyConfigurationCondition{Expression: e}, opts, p.Child("applyConfiguration", "expression"))...)
		}
		if m.JSONPatch != nil {
			errs = append(errs, field.Invalid(p.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("patchType"), m.PatchType, patchTypes))
	}
	return errs
}

func validateValidationActions(actions []admissionv1.ValidationAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[admissionv1.ValidationAction]bool{}
	for i, a := range actions {
		if !has(validationActions, string(a)) {
			errs = append(errs, field.NotSupported(p.Index(i), a, validationActions))
		}
		if seen[a] {
			errs = append(errs, field.Duplicate(p.Index(i), a))
		}
		seen[a] = true
	}
	if seen[admissionv1.Deny] && seen[admissionv1.Warn] {
		errs = append(errs, field.Invalid(p, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(seen) == 0 {
		errs = append(errs, field.Required(p, "at least one validation action is required"))
	}
	return errs
}

// validateExpressionWarnings checks a policy's status.typeChecking.
func validateExpressionWarnings(ws []admissionv1.ExpressionWarning, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, w := range ws {
		wp := p.Index(i)
		if w.Warning == "" {
			errs = append(errs, field.Required(wp.Child("warning"), ""))
		}
		ref := strings.TrimSpace(w.FieldRef)
		if ref == "" {
			errs = append(errs, field.Required(wp.Child("fieldRef"), ""))
			continue
		}
		if err := jsonpath.New("spec").Parse("{" + ref + "}"); err != nil {
			errs = append(errs, field.Invalid(wp.Child("fieldRef"), ref, fmt.Sprintf("invalid JSONPath: %v", err)))
		}
	}
	return errs
}
