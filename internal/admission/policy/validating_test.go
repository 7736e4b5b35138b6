package policy

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
)

// sourceOf is a Source over fixed objects, as the informers would hold them.
func sourceOf(t *testing.T, objs ...any) *Source {
	t.Helper()
	policies := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	bindings := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byPolicyName: bindingPolicyName})
	mpolicies := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	mbindings := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byPolicyName: bindingPolicyName})
	namespaces := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *admissionv1.ValidatingAdmissionPolicy:
			err = policies.Add(o)
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			err = bindings.Add(o)
		case *corev1.Namespace:
			err = namespaces.Add(o)
		case *admissionv1.MutatingAdmissionPolicy:
			err = mpolicies.Add(o)
		case *admissionv1.MutatingAdmissionPolicyBinding:
			err = mbindings.Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &Source{policies: policies, bindings: bindings, mpolicies: mpolicies, mbindings: mbindings,
		namespaces: admission.Namespaces{Lister: corelisters.NewNamespaceLister(namespaces)},
		compiled:   map[types.UID]compiledPolicy{}, mcompiled: map[types.UID]compiledMutating{},
		params: map[schema.GroupVersionKind]*paramInformer{}}
}

func vap(name string, mut func(s *admissionv1.ValidatingAdmissionPolicySpec), validations ...admissionv1.Validation) *admissionv1.ValidatingAdmissionPolicy {
	fail := admissionv1.Fail
	p := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Generation: 1},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.OperationAll},
					Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}}},
			Validations: validations,
		},
	}
	if mut != nil {
		mut(&p.Spec)
	}
	return p
}

func vapb(name, policy string, actions ...admissionv1.ValidationAction) *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: actions}}
}

func deploymentRequest(op admission.Operation, replicas int32, old *int32) *admission.Attributes {
	d := func(n int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", Labels: map[string]string{"app": "web"}},
			Spec: appsv1.DeploymentSpec{Replicas: &n}}
	}
	a := &admission.Attributes{Operation: op, Kind: appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Namespace: "prod", Name: "web",
		User: &auth.User{Name: "alice", Groups: []string{"devs"}}}
	if op != admission.Delete {
		a.Object = d(replicas)
	}
	if old != nil {
		a.OldObject = d(*old)
	}
	return a
}

func TestValidate(t *testing.T) {
	prod := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{"env": "prod"}}}
	limit := admissionv1.Validation{Expression: "object.spec.replicas <= 5", Message: "replicas must be no greater than 5"}
	ignore := admissionv1.Ignore
	three := int32(3)
	tests := []struct {
		name     string
		objs     []any
		req      *admission.Attributes
		wantCode int32
		wantMsg  string
		warning  string
		audit    string
	}{
		{name: "no policies", objs: []any{prod}, req: deploymentRequest(admission.Create, 9, nil)},
		{name: "a policy without binding does nothing", objs: []any{prod, vap("limit", nil, limit)}, req: deploymentRequest(admission.Create, 9, nil)},
		{name: "deny", objs: []any{prod, vap("limit", nil, limit), vapb("b", "limit", admissionv1.Deny)},
			req: deploymentRequest(admission.Create, 6, nil), wantCode: 422,
			wantMsg: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'limit' with binding 'b' denied request: replicas must be no greater than 5`},
		{name: "admit", objs: []any{prod, vap("limit", nil, limit), vapb("b", "limit", admissionv1.Deny)},
			req: deploymentRequest(admission.Create, 5, nil)},
		{name: "no message: the expression", objs: []any{prod, vap("limit", nil, admissionv1.Validation{Expression: "object.spec.replicas <= 5"}), vapb("b", "limit", admissionv1.Deny)},
			req: deploymentRequest(admission.Create, 6, nil), wantCode: 422,
			wantMsg: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'limit' with binding 'b' denied request: failed expression: object.spec.replicas <= 5`},
		{name: "messageExpression", objs: []any{prod, vap("limit", nil, admissionv1.Validation{Expression: "object.spec.replicas <= 5",
			MessageExpression: "'asked for ' + string(object.spec.replicas)"}), vapb("b", "limit", admissionv1.Deny)},
			req: deploymentRequest(admission.Create, 6, nil), wantCode: 422,
			wantMsg: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'limit' with binding 'b' denied request: asked for 6`},
		{name: "oldObject and variables", objs: []any{prod, vap("grow", func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.Variables = []admissionv1.Variable{{Name: "growth", Expression: "object.spec.replicas - oldObject.spec.replicas"}}
		}, admissionv1.Validation{Expression: "oldObject == null || variables.growth <= 1", Message: "grow slowly"}), vapb("b", "grow", admissionv1.Deny)},
			req: deploymentRequest(admission.Update, 5, &three), wantCode: 422,
			wantMsg: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'grow' with binding 'b' denied request: grow slowly`},
		{name: "request, namespaceObject and user", objs: []any{prod, vap("who", nil, admissionv1.Validation{
			Expression: "request.userInfo.username == 'bob' || namespaceObject.metadata.labels.env != 'prod'", Message: "only bob in prod"}), vapb("b", "who", admissionv1.Deny)},
			req: deploymentRequest(admission.Create, 1, nil), wantCode: 422,
			wantMsg: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'who' with binding 'b' denied request: only bob in prod`},
		{name: "matchConditions skip", objs: []any{prod, vap("limit", func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConditions = []admissionv1.MatchCondition{{Name: "not-web", Expression: "object.metadata.name != 'web'"}}
		}, limit), vapb("b", "limit", admissionv1.Deny)}, req: deploymentRequest(admission.Create, 9, nil)},
		{name: "warn", objs: []any{prod, vap("limit", nil, limit), vapb("b", "limit", admissionv1.Warn)},
			req:     deploymentRequest(admission.Create, 6, nil),
			warning: "Validation failed for ValidatingAdmissionPolicy 'limit' with binding 'b': replicas must be no greater than 5"},
		{name: "audit", objs: []any{prod, vap("limit", nil, limit), vapb("b", "limit", admissionv1.Audit)},
			req:   deploymentRequest(admission.Create, 6, nil),
			audit: `[{"message":"replicas must be no greater than 5","policy":"limit","binding":"b","expressionIndex":0,"validationActions":["Audit"]}]`},
		{name: "runtime error fails closed", objs: []any{prod, vap("err", nil, admissionv1.Validation{Expression: "object.spec.missing == 1"}), vapb("b", "err", admissionv1.Deny)},
			req: deploymentRequest(admission.Create, 1, nil), wantCode: 422,
			wantMsg: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'err' with binding 'b' denied request: expression 'object.spec.missing == 1' resulted in error: no such key: missing`},
		{name: "runtime error ignored", objs: []any{prod, vap("err", func(s *admissionv1.ValidatingAdmissionPolicySpec) { s.FailurePolicy = &ignore },
			admissionv1.Validation{Expression: "object.spec.missing == 1"}), vapb("b", "err", admissionv1.Deny)},
			req: deploymentRequest(admission.Create, 1, nil)},
		{name: "binding namespace selector", objs: []any{prod, vap("limit", nil, limit), func() any {
			b := vapb("b", "limit", admissionv1.Deny)
			b.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}
			return b
		}()}, req: deploymentRequest(admission.Create, 9, nil)},
		{name: "delete sees oldObject", objs: []any{prod, vap("keep", nil, admissionv1.Validation{Expression: "request.operation != 'DELETE' || oldObject.spec.replicas == 0", Message: "scale to zero first"}),
			vapb("b", "keep", admissionv1.Deny)}, req: deploymentRequest(admission.Delete, 0, &three), wantCode: 422,
			wantMsg: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'keep' with binding 'b' denied request: scale to zero first`},
		{name: "params kind with no paramRef evaluates with null params", objs: []any{prod, vap("p", func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.ParamKind = &admissionv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		}, admissionv1.Validation{Expression: "params == null", Message: "params"}), vapb("b", "p", admissionv1.Deny)},
			req: deploymentRequest(admission.Create, 1, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewValidating(nil)
			v.SetSource(sourceOf(t, tt.objs...))
			err := v.Validate(context.Background(), tt.req)
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else {
				se, ok := err.(*apierrors.StatusError)
				if !ok {
					t.Fatalf("err = %v, want a %d", err, tt.wantCode)
				}
				if se.ErrStatus.Code != tt.wantCode || se.Error() != tt.wantMsg {
					t.Fatalf("got %d %q,\nwant %d %q", se.ErrStatus.Code, se.Error(), tt.wantCode, tt.wantMsg)
				}
			}
			if w := tt.req.Warnings(); tt.warning != "" && (len(w) != 1 || w[0] != tt.warning) {
				t.Errorf("warnings %q, want %q", w, tt.warning)
			}
			if got := tt.req.Annotations()["validation.policy.admission.k8s.io/validation_failure"]; got != tt.audit {
				t.Errorf("audit annotation %q, want %q", got, tt.audit)
			}
		})
	}
}

func TestExemptAndNotReady(t *testing.T) {
	v := NewValidating(nil)
	v.readyWait = 0
	req := deploymentRequest(admission.Create, 1, nil)
	if err := v.Validate(context.Background(), req); err == nil || !strings.Contains(err.Error(), "not yet ready to handle request") {
		t.Errorf("before the policies are read: %v", err)
	}
	req.Kind = admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy")
	if err := v.Validate(context.Background(), req); err != nil {
		t.Errorf("policies themselves are exempt: %v", err)
	}
}
