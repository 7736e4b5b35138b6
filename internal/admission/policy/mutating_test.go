package policy

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/admission"
)

func map_(name string, reinvoke admissionv1.ReinvocationPolicyType, jsonPatch string) *admissionv1.MutatingAdmissionPolicy {
	fail := admissionv1.Fail
	return &admissionv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Generation: 1},
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			FailurePolicy: &fail, ReinvocationPolicy: reinvoke,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}}},
			Mutations: []admissionv1.Mutation{{PatchType: admissionv1.PatchTypeJSONPatch, JSONPatch: &admissionv1.JSONPatch{Expression: jsonPatch}}},
		},
	}
}

func mapb(name, policy string) *admissionv1.MutatingAdmissionPolicyBinding {
	return &admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy}}
}

func TestMutate(t *testing.T) {
	prod := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}
	addLabel := func(k, v string) string {
		return `[JSONPatch{op: "add", path: "/metadata/labels/` + k + `", value: "` + v + `"}]`
	}
	// a adds a label only once it sees b's.
	aSeesB := `has(object.metadata.labels.b) ? [JSONPatch{op: "add", path: "/metadata/labels/a", value: "saw-b"}] : []`
	tests := []struct {
		name       string
		objs       []any
		wantLabels map[string]string
		wantErr    string
	}{
		{name: "no binding, no change", objs: []any{prod, map_("p", admissionv1.NeverReinvocationPolicy, addLabel("x", "y"))},
			wantLabels: map[string]string{"app": "web"}},
		{name: "json patch", objs: []any{prod, map_("p", admissionv1.NeverReinvocationPolicy, addLabel("x", "y")), mapb("b", "p")},
			wantLabels: map[string]string{"app": "web", "x": "y"}},
		{name: "no reinvocation", objs: []any{prod, map_("a", admissionv1.NeverReinvocationPolicy, aSeesB), mapb("a", "a"),
			map_("b", admissionv1.NeverReinvocationPolicy, addLabel("b", "1")), mapb("b", "b")},
			wantLabels: map[string]string{"app": "web", "b": "1"}},
		{name: "IfNeeded runs again after a later change", objs: []any{prod, map_("a", admissionv1.IfNeededReinvocationPolicy, aSeesB), mapb("a", "a"),
			map_("b", admissionv1.NeverReinvocationPolicy, addLabel("b", "1")), mapb("b", "b")},
			wantLabels: map[string]string{"app": "web", "b": "1", "a": "saw-b"}},
		{name: "a patch that does not apply", objs: []any{prod, map_("p", admissionv1.NeverReinvocationPolicy,
			`[JSONPatch{op: "replace", path: "/spec/nothere/x", value: "y"}]`), mapb("b", "p")},
			wantErr: "policy 'p' with binding 'b' denied request: JSON Patch: replace operation does not apply: doc is missing path: /spec/nothere/x: missing value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewValidating(nil)
			v.SetSource(sourceOf(t, tt.objs...))
			req := deploymentRequest(admission.Create, 2, nil)
			err := admission.Chain{NewMutating(v).Plugin()}.Mutate(context.Background(), req)
			if tt.wantErr != "" {
				if se, ok := err.(*apierrors.StatusError); !ok || se.ErrStatus.Code != 403 || se.Error() != tt.wantErr {
					t.Fatalf("err = %v, want 403 %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d, ok := req.Object.(*appsv1.Deployment)
			if !ok {
				t.Fatalf("object is a %T, want the Deployment type", req.Object)
			}
			if len(d.Labels) != len(tt.wantLabels) {
				t.Fatalf("labels %v, want %v", d.Labels, tt.wantLabels)
			}
			for k, v := range tt.wantLabels {
				if d.Labels[k] != v {
					t.Errorf("labels %v, want %v", d.Labels, tt.wantLabels)
				}
			}
			if *d.Spec.Replicas != 2 {
				t.Errorf("replicas %d, want 2 (kept)", *d.Spec.Replicas)
			}
		})
	}
}
