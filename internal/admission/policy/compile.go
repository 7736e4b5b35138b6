package policy

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// baseEnv is Kubernetes' CEL environment at this release's compatibility
// version, with its libraries and strict cost limits.
var baseEnv = environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())

// compile turns a policy's expressions into an upstream Validator: its
// variables first (later expressions may use them), then matchConditions,
// validations, audit annotations and message expressions, all as stored
// expressions (the API checked them when the policy was written).
func compile(p *admissionv1.ValidatingAdmissionPolicy) validating.Validator {
	hasParams := p.Spec.ParamKind != nil
	withAuthz := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	noAuthz := plugincel.OptionalVariableDeclarations{HasParams: hasParams}
	c, err := plugincel.NewCompositedCompiler(baseEnv)
	if err != nil {
		return validating.NewValidator(nil, nil, nil, nil, p.Spec.FailurePolicy, err)
	}
	vars := make([]plugincel.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		vars[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	c.CompileAndStoreVariables(vars, withAuthz, environment.StoredExpressions)

	var matcher matchconditions.Matcher
	if conds := p.Spec.MatchConditions; len(conds) > 0 {
		exprs := make([]plugincel.ExpressionAccessor, len(conds))
		for i := range conds {
			exprs[i] = (*matchconditions.MatchCondition)(&conds[i])
		}
		matcher = matchconditions.NewMatcher(c.CompileCondition(exprs, withAuthz, environment.StoredExpressions),
			p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	validations := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	audits := make([]plugincel.ExpressionAccessor, len(p.Spec.AuditAnnotations))
	for i, a := range p.Spec.AuditAnnotations {
		audits[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	return validating.NewValidator(
		c.CompileCondition(validations, withAuthz, environment.StoredExpressions),
		matcher,
		c.CompileCondition(audits, withAuthz, environment.StoredExpressions),
		c.CompileCondition(messages, noAuthz, environment.StoredExpressions),
		p.Spec.FailurePolicy, nil)
}

// variable is a policy's named expression.
type variable = validating.Variable
