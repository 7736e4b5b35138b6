package priority

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestBootstrapClassification: requests are classified by upstream's
// bootstrap schemas as upstream's server classifies them.
func TestBootstrapClassification(t *testing.T) {
	c := Bootstrap(600)
	authenticated := []string{"system:authenticated"}
	for _, tc := range []struct {
		name                string
		r                   Request
		schema, level, flow string
	}{
		{"admin", Request{User: "admin", Groups: []string{"system:masters", "system:authenticated"}, Verb: "list", IsResource: true, Resource: "pods", Namespace: "default"},
			"exempt", "exempt", "exempt/"},
		{"anonymous health check", Request{User: "system:anonymous", Groups: []string{"system:unauthenticated"}, Verb: "get", Path: "/readyz"},
			"probes", "exempt", "probes/"},
		{"node status", Request{User: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}, Verb: "patch", IsResource: true, Resource: "nodes", Subresource: "status"},
			"system-node-high", "node-high", "system-node-high/system:node:n1"},
		{"controller manager's lease", Request{User: "system:kube-controller-manager", Groups: authenticated, Verb: "update", IsResource: true,
			APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system"}, "system-leader-election", "leader-election", "system-leader-election/system:kube-controller-manager"},
		{"scheduler", Request{User: "system:kube-scheduler", Groups: authenticated, Verb: "list", IsResource: true, Resource: "pods"},
			"kube-scheduler", "workload-high", "kube-scheduler/"},
		{"a service account", Request{User: "system:serviceaccount:default:app", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"},
			Verb: "list", IsResource: true, Resource: "configmaps", Namespace: "default"}, "service-accounts", "workload-low", "service-accounts/system:serviceaccount:default:app"},
		{"a user", Request{User: "alice", Groups: authenticated, Verb: "get", Path: "/version"}, "global-default", "global-default", "global-default/alice"},
	} {
		m, ok := c.Classify(tc.r)
		if !ok || m.Schema.Name != tc.schema || m.Level.Name != tc.level || m.Flow != tc.flow {
			t.Errorf("%s: %v %s %s %q, want %s %s %q", tc.name, ok, m.Schema.GetName(), m.Level.Name, m.Flow, tc.schema, tc.level, tc.flow)
		}
	}
	lv := c.Levels()
	if !lv["exempt"].Exempt || lv["global-default"].Seats != 49 || lv["workload-low"].Seats != 245 || lv["catch-all"].Seats != 13 || lv["catch-all"].Reject != true {
		t.Errorf("levels: exempt %+v, global-default %+v, workload-low %+v, catch-all %+v", *lv["exempt"], *lv["global-default"], *lv["workload-low"], *lv["catch-all"])
	}
}

// TestOwnSchema: a schema of a lower matchingPrecedence wins; one whose
// level does not exist is left out; a level's seats are its part of the
// shares; a configuration without a catch-all leaves requests unmatched.
func TestOwnSchema(t *testing.T) {
	level := func(name string, shares int32, reject bool) *flowcontrolv1.PriorityLevelConfiguration {
		lr := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{QueueLengthLimit: 7}}
		if reject {
			lr = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
		}
		return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To(shares), LimitResponse: lr}}}
	}
	schema := func(name string, precedence int32, level string, users ...string) *flowcontrolv1.FlowSchema {
		var subjects []flowcontrolv1.Subject
		for _, u := range users {
			subjects = append(subjects, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: u}})
		}
		return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flowcontrolv1.FlowSchemaSpec{
			MatchingPrecedence: precedence, PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByNamespaceType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{Subjects: subjects,
				ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}, Namespaces: []string{"*"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"/healthz/*"}}}}}}}
	}
	levels := []*flowcontrolv1.PriorityLevelConfiguration{level("one", 1, true), level("three", 3, false)}
	schemas := []*flowcontrolv1.FlowSchema{schema("late", 900, "three", "*"), schema("early", 100, "one", "noxu"), schema("gone", 1, "missing", "*")}
	if !Dangling(schemas[2], levels) || Dangling(schemas[0], levels) {
		t.Error("Dangling")
	}
	c := New(schemas, levels, 10)
	for _, tc := range []struct {
		r      Request
		schema string
		flow   string
	}{
		{Request{User: "noxu", Verb: "get", IsResource: true, Resource: "pods", Subresource: "log", Namespace: "ns1"}, "early", "early/ns1"},
		{Request{User: "other", Verb: "get", IsResource: true, Resource: "pods", Subresource: "log", Namespace: "ns1"}, "late", "late/ns1"},
		{Request{User: "other", Verb: "get", Path: "/healthz/etcd"}, "late", "late/"},
		{Request{User: "other", Verb: "get", IsResource: true, Resource: "pods", Namespace: "ns1"}, "", ""},
		{Request{User: "other", Verb: "get", IsResource: true, Resource: "pods", Subresource: "log"}, "", ""}, // cluster scope
		{Request{User: "other", Verb: "get", Path: "/version"}, "", ""},
	} {
		m, ok := c.Classify(tc.r)
		if tc.schema == "" {
			if ok {
				t.Errorf("%+v matched %s", tc.r, m.Schema.Name)
			}
			continue
		}
		if !ok || m.Schema.Name != tc.schema || m.Flow != tc.flow {
			t.Errorf("%+v: %v %s %q, want %s %q", tc.r, ok, m.Schema.GetName(), m.Flow, tc.schema, tc.flow)
		}
	}
	one, three := c.Levels()["one"], c.Levels()["three"]
	if *one != (Level{Name: "one", UID: "uid-one", Seats: 3, Reject: true, QueueLength: 50}) || three.Seats != 8 || three.Reject || three.QueueLength != 7 {
		t.Errorf("levels: %+v %+v", *one, *three)
	}
}

// BenchmarkClassify: a controller's request against upstream's bootstrap
// schemas (the server classifies every request).
func BenchmarkClassify(b *testing.B) {
	c := Bootstrap(600)
	r := Request{User: "system:serviceaccount:default:app", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"},
		Verb: "list", IsResource: true, Resource: "configmaps", Namespace: "default"}
	for b.Loop() {
		if _, ok := c.Classify(r); !ok {
			b.Fatal("not classified")
		}
	}
}
