package admissionregistration

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPolicyDefaults(t *testing.T) {
	p := &admissionv1.ValidatingAdmissionPolicy{Spec: admissionv1.ValidatingAdmissionPolicySpec{
		MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{}}},
	}}
	validatingAdmissionPolicies().Strategy.Default(p)
	s := p.Spec
	if *s.FailurePolicy != admissionv1.Fail || *s.MatchConstraints.MatchPolicy != admissionv1.Equivalent ||
		s.MatchConstraints.NamespaceSelector == nil || s.MatchConstraints.ObjectSelector == nil ||
		*s.MatchConstraints.ResourceRules[0].Scope != admissionv1.AllScopes {
		t.Errorf("defaults: %+v", s)
	}
	b := &admissionv1.ValidatingAdmissionPolicyBinding{}
	validatingAdmissionPolicyBindings().Strategy.Default(b)
	if b.Spec.MatchResources != nil {
		t.Errorf("a binding without matchResources keeps none: %+v", b.Spec.MatchResources)
	}
}

func TestValidatePolicies(t *testing.T) {
	rule := admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{admissionv1.Create},
		Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
	}}
	policy := func(mut func(s *admissionv1.ValidatingAdmissionPolicySpec)) *admissionv1.ValidatingAdmissionPolicy {
		p := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: admissionv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{rule}},
			Validations:      []admissionv1.Validation{{Expression: "object.spec.replicas <= 5"}},
		}}
		if mut != nil {
			mut(&p.Spec)
		}
		validatingAdmissionPolicies().Strategy.Default(p)
		return p
	}
	deny := admissionv1.DenyAction
	tests := []struct {
		name string
		obj  any
		want []string // substrings of the errors, in order; none: valid
	}{
		{"valid", policy(nil), nil},
		{"no validations", policy(func(s *admissionv1.ValidatingAdmissionPolicySpec) { s.Validations = nil }),
			[]string{"spec.validations: Required value: validations or auditAnnotations must contain at least one item",
				"spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item"}},
		{"no resource rules", policy(func(s *admissionv1.ValidatingAdmissionPolicySpec) { s.MatchConstraints.ResourceRules = nil }),
			[]string{"spec.matchConstraints.resourceRules: Required value"}},
		{"expression does not compile", policy(func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.Validations[0].Expression = "object.spec.replicas <="
		}),
			[]string{"spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": compilation failed"}},
		{"expression not boolean", policy(func(s *admissionv1.ValidatingAdmissionPolicySpec) { s.Validations[0].Expression = "'x'" }),
			[]string{"spec.validations[0].expression: Invalid value"}},
		{"params without paramKind", policy(func(s *admissionv1.ValidatingAdmissionPolicySpec) { s.Validations[0].Expression = "params.x == 1" }),
			[]string{"spec.validations[0].expression: Invalid value"}},
		{"params with paramKind", policy(func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.ParamKind = &admissionv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			s.Validations[0].Expression = "params.data.x == '1'"
		}), nil},
		{"variables", policy(func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.Variables = []admissionv1.Variable{{Name: "r", Expression: "object.spec.replicas"}, {Name: "in", Expression: "1"}}
			s.Validations[0].Expression = "variables.r <= 5"
		}), []string{"spec.variables[1].name: Invalid value: \"in\": must be a valid CEL identifier"}},
		{"message with a newline", policy(func(s *admissionv1.ValidatingAdmissionPolicySpec) { s.Validations[0].Message = "a\nb" }),
			[]string{"spec.validations[0].message: Invalid value: \"a\\nb\": must not contain line breaks"}},
		{"bad reason", policy(func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			r := metav1.StatusReasonNotFound
			s.Validations[0].Reason = &r
		}), []string{`spec.validations[0].reason: Unsupported value: "NotFound": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"`}},
		{"binding without actions", &admissionv1.ValidatingAdmissionPolicyBinding{Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p"}},
			[]string{"spec.validationActions: Required value: at least one validation action is required"}},
		{"binding Deny and Warn", &admissionv1.ValidatingAdmissionPolicyBinding{Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p",
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny, admissionv1.Warn}}},
			[]string{`spec.validationActions: Invalid value: ["Deny","Warn"]: must not contain both Deny and Warn`}},
		{"binding paramRef", &admissionv1.ValidatingAdmissionPolicyBinding{Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p",
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			ParamRef:          &admissionv1.ParamRef{Name: "a", Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: &deny}}},
			[]string{"spec.paramRef.name: Forbidden: name and selector are mutually exclusive", "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive"}},
		{"binding paramRef needs an action", &admissionv1.ValidatingAdmissionPolicyBinding{Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p",
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}, ParamRef: &admissionv1.ParamRef{Name: "a"}}},
			[]string{"spec.paramRef.parameterNotFoundAction: Required value"}},
		{"mutating policy", &admissionv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: admissionv1.MutatingAdmissionPolicySpec{
			FailurePolicy:    ptr(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{rule}},
			Mutations: []admissionv1.Mutation{{PatchType: admissionv1.PatchTypeJSONPatch,
				JSONPatch: &admissionv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/metadata/labels/a", value: "b"}]`}}},
		}}, []string{"spec.reinvocationPolicy: Required value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs []string
			switch o := tt.obj.(type) {
			case *admissionv1.ValidatingAdmissionPolicy:
				for _, e := range validatingAdmissionPolicies().Strategy.Validate(o) {
					errs = append(errs, e.Error())
				}
			case *admissionv1.ValidatingAdmissionPolicyBinding:
				for _, e := range validatingAdmissionPolicyBindings().Strategy.Validate(o) {
					errs = append(errs, e.Error())
				}
			case *admissionv1.MutatingAdmissionPolicy:
				mutatingAdmissionPolicies().Strategy.Default(o)
				for _, e := range mutatingAdmissionPolicies().Strategy.Validate(o) {
					errs = append(errs, e.Error())
				}
			}
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %q, want %d like %q", errs, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i], w) {
					t.Errorf("error %d: %q lacks %q", i, errs[i], w)
				}
			}
		})
	}
}

// TestWebhookMatchConditionsCompile: a webhook whose matchCondition does
// not compile is refused at write, as upstream ("compilation failed").
func TestWebhookMatchConditionsCompile(t *testing.T) {
	url := "https://example.com/hook"
	config := func(expr string) *admissionv1.MutatingWebhookConfiguration {
		c := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionv1.MutatingWebhook{{
			Name: "w.example.com", ClientConfig: admissionv1.WebhookClientConfig{URL: &url},
			SideEffects: ptr(admissionv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			MatchConditions: []admissionv1.MatchCondition{{Name: "m", Expression: expr}},
		}}}
		mutatingWebhookConfigurations().Strategy.Default(c)
		return c
	}
	if errs := mutatingWebhookConfigurations().Strategy.Validate(config("object.metadata.name != 'skip-me'")); len(errs) != 0 {
		t.Fatalf("valid condition refused: %v", errs)
	}
	errs := mutatingWebhookConfigurations().Strategy.Validate(config("... [] bad expression"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "webhooks[0].matchConditions[0].expression") || !strings.Contains(errs[0].Error(), "compilation failed") {
		t.Fatalf("bad condition: %v", errs)
	}
}
