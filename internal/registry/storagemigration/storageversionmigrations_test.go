package storagemigration

import (
	"strings"
	"testing"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func errorStrings(errs field.ErrorList) string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return strings.Join(out, "\n")
}

func svm(group, resource string) *storagemigrationv1.StorageVersionMigration {
	return &storagemigrationv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec: storagemigrationv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: group, Resource: resource}}}
}

func TestStorageVersionMigrationValidation(t *testing.T) {
	st := Resources()[0].Strategy
	for _, tt := range []struct {
		obj  *storagemigrationv1.StorageVersionMigration
		want string
	}{
		{svm("apps", "deployments"), ""},
		{svm("", "secrets"), ""},
		{svm("", ""), `spec.resource.resource: Required value: resource is required to be set`},
		{svm("Apps", "Deployments"), `spec.resource.resource: Invalid value: "Deployments": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')` + "\n" +
			`spec.resource.group: Invalid value: "Apps": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
	} {
		if got := errorStrings(st.Validate(tt.obj)); got != tt.want {
			t.Errorf("%v: errors\n%s\nwant\n%s", tt.obj.Spec.Resource, got, tt.want)
		}
	}
	if got := errorStrings(st.ValidateUpdate(svm("apps", "replicasets"), svm("apps", "deployments"))); !strings.HasSuffix(got, "field is immutable") || !strings.HasPrefix(got, "spec: Invalid value") {
		t.Errorf("changing the spec: %s", got)
	}
}

func TestStorageVersionMigrationStatus(t *testing.T) {
	st := Resources()[0].Strategy
	cond := func(typ string, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: "Test", LastTransitionTime: metav1.Now()}
	}
	with := func(rv string, conds ...metav1.Condition) *storagemigrationv1.StorageVersionMigration {
		s := svm("apps", "deployments")
		s.Status = storagemigrationv1.StorageVersionMigrationStatus{ResourceVersion: rv, Conditions: conds}
		return s
	}
	for _, tt := range []struct {
		name     string
		obj, old *storagemigrationv1.StorageVersionMigration
		want     string
	}{
		{"running", with("12", cond("Running", metav1.ConditionTrue)), with(""), ""},
		{"succeeded", with("12", cond("Succeeded", metav1.ConditionTrue)), with("12", cond("Running", metav1.ConditionTrue)), ""},
		{"bad resourceVersion", with("012"), with(""), `status.resourceVersion: Invalid value: "012": resource version is not well formed: 012`},
		{"resourceVersion changed", with("13"), with("12"), `status.resourceVersion: Invalid value: "13": field is immutable`},
		{"both", with("", cond("Succeeded", metav1.ConditionTrue), cond("Failed", metav1.ConditionTrue)), with(""),
			"status.conditions: Invalid value: …: Both success and failed conditions cannot be true at the same time"},
		{"unsucceeded", with("", cond("Succeeded", metav1.ConditionFalse)), with("", cond("Succeeded", metav1.ConditionTrue)),
			"status.conditions: Invalid value: …: Success condition cannot be set to false once it is true"},
		{"unfailed", with(""), with("", cond("Failed", metav1.ConditionTrue)),
			"status.conditions: Invalid value: …: Failed condition cannot be set to false once it is true"},
	} {
		got := errorStrings(st.ValidateStatusUpdate(tt.obj, tt.old))
		// "…" stands for the conditions' value.
		before, after, elided := strings.Cut(tt.want, "…")
		if elided && strings.HasPrefix(got, before) && strings.HasSuffix(got, after) && !strings.Contains(got, "\n") {
			continue
		}
		if got != tt.want {
			t.Errorf("%s: errors\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}
