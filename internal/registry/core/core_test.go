package core

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"

	"plainkube.dev/plainkube/internal/registry"
)

// resource returns the descriptor with the given plural.
func lookup(t *testing.T, plural string) registry.Resource {
	t.Helper()
	for _, r := range Resources() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %q", plural)
	return registry.Resource{}
}

// create runs what the generic handler runs on a create, in its order, and
// returns the validation errors.
func create(t *testing.T, plural string, obj runtime.Object) []string {
	t.Helper()
	r := lookup(t, plural)
	st := r.Strategy
	if st.Default != nil {
		st.Default(obj)
	}
	if st.PrepareForCreate != nil {
		st.PrepareForCreate(context.Background(), obj)
	}
	nameFn := apivalidation.NameIsDNSSubdomain
	if st.ValidateName != nil {
		nameFn = st.ValidateName
	}
	m, _ := meta.Accessor(obj)
	errs := apivalidation.ValidateObjectMetaAccessor(m, r.Namespaced, nameFn, field.NewPath("metadata"))
	if st.Validate != nil {
		errs = append(errs, st.Validate(obj)...)
	}
	return strs(errs)
}

// update runs what the generic handler runs on a main-resource update.
func update(t *testing.T, plural string, obj, old runtime.Object) []string {
	t.Helper()
	r := lookup(t, plural)
	st := r.Strategy
	if st.Default != nil {
		st.Default(obj)
	}
	if hasSub(r, "status") {
		f := reflect.ValueOf(obj).Elem().FieldByName("Status")
		f.Set(reflect.ValueOf(old).Elem().FieldByName("Status"))
	}
	if st.PrepareForUpdate != nil {
		st.PrepareForUpdate(context.Background(), obj, old)
	}
	var errs field.ErrorList
	if st.Validate != nil {
		errs = append(errs, st.Validate(obj)...)
	}
	if st.ValidateUpdate != nil {
		errs = append(errs, st.ValidateUpdate(obj, old)...)
	}
	return strs(errs)
}

func hasSub(r registry.Resource, s string) bool {
	for _, x := range r.Subresources {
		if x == s {
			return true
		}
	}
	return false
}

func strs(errs field.ErrorList) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// expect checks that errs holds want ("" meaning no errors at all).
func expect(t *testing.T, errs []string, want string) {
	t.Helper()
	if want == "" {
		if len(errs) != 0 {
			t.Errorf("unexpected errors:\n  %s", strings.Join(errs, "\n  "))
		}
		return
	}
	for _, e := range errs {
		if e == want || (strings.HasSuffix(want, "…") && strings.HasPrefix(e, strings.TrimSuffix(want, "…"))) {
			return
		}
	}
	t.Errorf("missing error\n want: %s\n  got: %s", want, strings.Join(errs, "\n       "))
}

func TestResources(t *testing.T) {
	type desc struct {
		kind, singular string
		short          []string
		cats           []string
		namespaced     bool
		subs           []string
		generation     bool
	}
	want := map[string]desc{
		"namespaces":             {"Namespace", "namespace", []string{"ns"}, nil, false, []string{"status", "finalize"}, false},
		"pods":                   {"Pod", "pod", []string{"po"}, []string{"all"}, true, []string{"status", "binding", "eviction", "ephemeralcontainers", "resize", "log", "exec", "attach", "portforward", "proxy"}, true},
		"services":               {"Service", "service", []string{"svc"}, []string{"all"}, true, []string{"status", "proxy"}, false},
		"endpoints":              {"Endpoints", "endpoints", []string{"ep"}, nil, true, nil, false},
		"configmaps":             {"ConfigMap", "configmap", []string{"cm"}, nil, true, nil, false},
		"secrets":                {"Secret", "secret", nil, nil, true, nil, false},
		"serviceaccounts":        {"ServiceAccount", "serviceaccount", []string{"sa"}, nil, true, []string{"token"}, false},
		"nodes":                  {"Node", "node", []string{"no"}, nil, false, []string{"status", "proxy"}, false},
		"events":                 {"Event", "event", []string{"ev"}, nil, true, nil, false},
		"limitranges":            {"LimitRange", "limitrange", []string{"limits"}, nil, true, nil, false},
		"resourcequotas":         {"ResourceQuota", "resourcequota", []string{"quota"}, nil, true, []string{"status"}, false},
		"persistentvolumes":      {"PersistentVolume", "persistentvolume", []string{"pv"}, nil, false, []string{"status"}, false},
		"persistentvolumeclaims": {"PersistentVolumeClaim", "persistentvolumeclaim", []string{"pvc"}, nil, true, []string{"status"}, false},
		"replicationcontrollers": {"ReplicationController", "replicationcontroller", []string{"rc"}, []string{"all"}, true, []string{"status", "scale"}, true},
		"podtemplates":           {"PodTemplate", "podtemplate", nil, nil, true, nil, false},
		"componentstatuses":      {"ComponentStatus", "componentstatus", []string{"cs"}, nil, false, nil, false},
		"bindings":               {"Binding", "binding", nil, nil, true, nil, false},
	}
	got := Resources()
	if len(got) != len(want) {
		t.Errorf("%d resources, want %d", len(got), len(want))
	}
	for _, r := range got {
		w, ok := want[r.Plural]
		if !ok {
			t.Errorf("unexpected resource %q", r.Plural)
			continue
		}
		if r.Kind.Group != "" || r.Kind.Version != "v1" || r.Kind.Kind != w.kind {
			t.Errorf("%s: kind %v", r.Plural, r.Kind)
		}
		if r.Singular != w.singular || !reflect.DeepEqual(r.ShortNames, w.short) || !reflect.DeepEqual(r.Categories, w.cats) ||
			r.Namespaced != w.namespaced || !reflect.DeepEqual(r.Subresources, w.subs) || r.TracksGeneration != w.generation {
			t.Errorf("%s: got %+v", r.Plural, r)
		}
		if r.Strategy.Table != nil {
			t.Errorf("%s: Table should be left to package printers", r.Plural)
		}
		// Every strategy must cope with a zero object (discovery and field
		// selector checks call SelectableFields on one).
		obj := newObject(r)
		if r.Strategy.SelectableFields != nil {
			r.Strategy.SelectableFields(obj)
		}
		if r.Strategy.Default != nil {
			r.Strategy.Default(obj)
		}
	}
}

func newObject(r registry.Resource) runtime.Object {
	obj, err := scheme.Scheme.New(r.Kind)
	if err != nil {
		panic(err)
	}
	return obj
}
