package flowcontrol

import (
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apfbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/utils/ptr"
)

func expectErrors(t *testing.T, name string, errs field.ErrorList, want ...string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if len(got) != len(want) {
		t.Errorf("%s: got errors %q, want %q", name, got, want)
		return
	}
	for i := range want {
		// A want ending in "…" is a prefix (the value shown is long).
		if w, ok := strings.CutSuffix(want[i], "…"); ok && strings.HasPrefix(got[i], w) {
			continue
		}
		if got[i] != want[i] {
			t.Errorf("%s: error %d = %q, want %q", name, i, got[i], want[i])
		}
	}
}

func TestBootstrapConfigurationIsValid(t *testing.T) {
	for _, list := range [][]*flowcontrolv1.PriorityLevelConfiguration{apfbootstrap.MandatoryPriorityLevelConfigurations, apfbootstrap.SuggestedPriorityLevelConfigurations} {
		for _, pl := range list {
			pl = pl.DeepCopy()
			DefaultPriorityLevel(pl)
			expectErrors(t, pl.Name, validatePriorityLevel(pl))
		}
	}
	for _, list := range [][]*flowcontrolv1.FlowSchema{apfbootstrap.MandatoryFlowSchemas, apfbootstrap.SuggestedFlowSchemas} {
		for _, fs := range list {
			fs = fs.DeepCopy()
			DefaultFlowSchema(fs)
			expectErrors(t, fs.Name, validateFlowSchema(fs))
		}
	}
}

func TestDefaults(t *testing.T) {
	fs := &flowcontrolv1.FlowSchema{}
	DefaultFlowSchema(fs)
	if fs.Spec.MatchingPrecedence != 1000 || fs.Spec.DistinguisherMethod != nil {
		t.Errorf("defaulted FlowSchema spec = %+v", fs.Spec)
	}
	pl := &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
			Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}}},
	}}
	DefaultPriorityLevel(pl)
	l := pl.Spec.Limited
	if *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || l.BorrowingLimitPercent != nil ||
		*l.LimitResponse.Queuing != (flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50}) {
		t.Errorf("defaulted limited level = %+v, queuing %+v", l, l.LimitResponse.Queuing)
	}
	pl = &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](0)}}}
	DefaultPriorityLevel(pl)
	if *pl.Spec.Limited.NominalConcurrencyShares != 0 {
		t.Errorf("an explicit nominalConcurrencyShares 0 became %d", *pl.Spec.Limited.NominalConcurrencyShares)
	}
	pl = &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementExempt, Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{}}}
	DefaultPriorityLevel(pl)
	if *pl.Spec.Exempt.NominalConcurrencyShares != 0 || *pl.Spec.Exempt.LendablePercent != 0 {
		t.Errorf("defaulted exempt level = %+v", pl.Spec.Exempt)
	}
}

func flowSchema(name string, spec flowcontrolv1.FlowSchemaSpec) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	DefaultFlowSchema(fs)
	return fs
}

func TestFlowSchemaValidation(t *testing.T) {
	pl := flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload-low"}
	users := []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}}}
	tests := []struct {
		name string
		fs   *flowcontrolv1.FlowSchema
		want []string
	}{
		{name: "precedence 1", fs: flowSchema("mine", flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: pl, MatchingPrecedence: 1}),
			want: []string{"spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"}},
		{name: "precedence too large", fs: flowSchema("mine", flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: pl, MatchingPrecedence: 10001}),
			want: []string{"spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"}},
		{name: "no level, bad distinguisher", fs: flowSchema("mine", flowcontrolv1.FlowSchemaSpec{
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: "ByFoo"}}),
			want: []string{
				`spec.distinguisherMethod.type: Unsupported value: {"Type":"ByFoo"}: supported values: "ByNamespace", "ByUser"`,
				"spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
			}},
		{name: "empty rule", fs: flowSchema("mine", flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: pl, Rules: []flowcontrolv1.PolicyRulesWithSubjects{{}}}),
			want: []string{
				"spec.rules[0].subjects: Required value: subjects must contain at least one value",
				"spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
			}},
		{name: "bad subjects and rules", fs: flowSchema("mine", flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: pl, Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects: []flowcontrolv1.Subject{
				{Kind: flowcontrolv1.SubjectKindUser, Group: &flowcontrolv1.GroupSubject{Name: "g"}},
				{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "*"}},
				{Kind: "Robot"},
			},
			ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get", "frob"}, APIGroups: []string{"*", "apps"}, Resources: []string{"pods"}, Namespaces: []string{"Bad_NS"}}},
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*", "get"}, NonResourceURLs: []string{"/healthz", "/api/*/x"}}},
		}}}),
			want: []string{
				"spec.rules[0].subjects[0].user: Required value: user is required when subject kind is 'User'",
				"spec.rules[0].subjects[0].group: Forbidden: group is forbidden when subject kind is not 'Group'",
				"spec.rules[0].subjects[1].serviceAccount.namespace: Required value: must specify namespace for service account",
				`spec.rules[0].subjects[2].kind: Unsupported value: "Robot": supported values: "Group", "ServiceAccount", "User"`,
				`spec.rules[0].resourceRules[0].verbs: Unsupported value: ["get","frob"]: supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"`,
				`spec.rules[0].resourceRules[0].apiGroups: Invalid value: ["*","apps"]: if '*' is present, must not specify other api groups`,
				`spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: "Bad_NS": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`spec.rules[0].nonResourceRules[0].verbs: Invalid value: ["*","get"]: if '*' is present, must not specify other verbs`,
				`spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: "/api/*/x": wildcard can only do suffix matching`,
			}},
		{name: "good rules", fs: flowSchema("mine", flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: pl, Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects:         users,
			ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true}},
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/", "/healthz/*"}}},
		}}})},
		{name: "catch-all changed", fs: flowSchema("catch-all", flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: pl}),
			want: []string{`spec: Invalid value: …`}},
		{name: "duplicate conditions", fs: func() *flowcontrolv1.FlowSchema {
			fs := flowSchema("mine", flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: pl})
			fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: "Dangling"}, {Type: "Dangling"}, {}}
			return fs
		}(), want: []string{`status.conditions[1].type: Duplicate value: "Dangling"`, "status.conditions[2].type: Required value"}},
	}
	for _, tt := range tests {
		expectErrors(t, tt.name, validateFlowSchema(tt.fs), tt.want...)
	}
	errs := validateFlowSchema(flowSchema("catch-all", flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: pl}))
	if len(errs) != 1 || !strings.HasSuffix(errs[0].Error(), ": spec of 'catch-all' must equal the fixed value") {
		t.Errorf("changed catch-all: %v", errs)
	}
}

func limited(queuing *flowcontrolv1.QueuingConfiguration) flowcontrolv1.PriorityLevelConfigurationSpec {
	lr := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	if queuing != nil {
		lr = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: queuing}
	}
	return flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: lr}}
}

func TestPriorityLevelValidation(t *testing.T) {
	level := func(name string, spec flowcontrolv1.PriorityLevelConfigurationSpec, change func(*flowcontrolv1.PriorityLevelConfiguration)) *flowcontrolv1.PriorityLevelConfiguration {
		pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
		DefaultPriorityLevel(pl)
		if change != nil {
			change(pl)
		}
		return pl
	}
	tests := []struct {
		name string
		pl   *flowcontrolv1.PriorityLevelConfiguration
		want []string
	}{
		{name: "reject", pl: level("mine", limited(nil), nil)},
		{name: "no type", pl: level("mine", flowcontrolv1.PriorityLevelConfigurationSpec{}, nil),
			want: []string{"spec.type: Required value"}},
		{name: "exempt type, other name", pl: level("mine", flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}, nil),
			want: []string{"spec.type: Invalid value: \"Exempt\": must be 'Exempt' if and only if `name` is 'exempt'"}},
		{name: "limited without limited", pl: level("mine", flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited}, nil),
			want: []string{"spec.limited: Required value: must not be empty when type is Limited"}},
		{name: "queue sizes", pl: level("mine", limited(&flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 5, QueueLengthLimit: -1}), nil),
			want: []string{
				"spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive",
				"spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)",
			}},
		{name: "entropy", pl: level("mine", limited(&flowcontrolv1.QueuingConfiguration{Queues: 128, HandSize: 9}), nil),
			want: []string{"spec.limited.limitResponse.queuing.handSize: Invalid value: 9: required entropy bits of deckSize 128 and handSize 9 should not be greater than 60"}},
		{name: "shares and percents", pl: level("mine", limited(nil), func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](-1)
			pl.Spec.Limited.LendablePercent = ptr.To[int32](101)
			pl.Spec.Limited.BorrowingLimitPercent = ptr.To[int32](-2)
			pl.Spec.Limited.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: 1}
		}), want: []string{
			"spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
			"spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited",
			"spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
			"spec.limited.borrowingLimitPercent: Invalid value: -2: if specified, must be a non-negative integer",
		}},
		{name: "round-trip annotation", pl: level("mine", limited(nil), func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Annotations = map[string]string{"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""}
		}), want: []string{"metadata.annotations: Forbidden: annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"}},
		{name: "exempt with new exempt settings", pl: level("exempt", flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt,
			Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](5), LendablePercent: ptr.To[int32](10)}}, nil)},
		{name: "exempt made limited", pl: level("exempt", limited(nil), nil), want: []string{
			"spec.type: Invalid value: \"Limited\": must be 'Exempt' if and only if `name` is 'exempt'",
			"spec: Invalid value: …",
		}},
		{name: "catch-all changed", pl: level("catch-all", limited(nil), nil), want: []string{"spec: Invalid value: …"}},
		{name: "duplicate conditions", pl: level("mine", limited(nil), func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "X"}, {Type: "X"}}
		}), want: []string{`status.conditions[1].type: Duplicate value: "X"`}},
	}
	for _, tt := range tests {
		expectErrors(t, tt.name, validatePriorityLevel(tt.pl), tt.want...)
	}
	errs := validatePriorityLevel(level("exempt", limited(nil), nil))
	if len(errs) != 2 || !strings.HasSuffix(errs[1].Error(), ": spec of 'exempt' except the 'spec.exempt' field must equal the fixed value") {
		t.Errorf("exempt made limited: %v", errs)
	}
}
