package custom

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// conversionTimeout bounds one conversion of stored objects (a webhook call).
const conversionTimeout = 30 * time.Second

// Decode reads a stored custom object: it converts it from the
// storage version to the served version, prunes it with that version's
// schema and applies its defaults, as upstream's storage decoder does.
func (s *Served) Decode(value []byte, rev int64) (runtime.Object, error) {
	var m map[string]interface{}
	if err := utiljson.Unmarshal(value, &m); err != nil {
		return nil, fmt.Errorf("decoding stored %s: %w", s.groupResource(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	out, err := s.Convert([]*unstructured.Unstructured{u}, s.Ver.Resource.Kind.Version)
	if err != nil {
		return nil, err
	}
	u = out[0]
	if s.Ver.Coerce != nil {
		if _, err := s.Ver.Coerce(u, CoerceOptions{FromStorage: true}); err != nil {
			return nil, fmt.Errorf("decoding stored %s: %w", s.groupResource(), err)
		}
	}
	if d := s.Ver.Resource.Strategy.Default; d != nil {
		d(u)
	}
	if rev > 0 {
		u.SetResourceVersion(strconv.FormatInt(rev, 10))
	}
	return u, nil
}

// Encode produces the stored form of a custom object: JSON in the
// storage version, without resourceVersion.
func (s *Served) Encode(obj runtime.Object) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s: expected an unstructured object, got %T", s.groupResource(), obj)
	}
	u.SetGroupVersionKind(s.Ver.Resource.Kind)
	c := u.DeepCopy()
	c.SetResourceVersion("")
	out, err := s.Convert([]*unstructured.Unstructured{c}, s.Def.StorageVersion)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out[0].Object)
}

// Convert brings objs to version of the resource's group: by relabelling
// apiVersion (strategy None) or through the resource's converter.
func (s *Served) Convert(objs []*unstructured.Unstructured, version string) ([]*unstructured.Unstructured, error) {
	apiVersion := s.Def.Group + "/" + version
	need := false
	for _, u := range objs {
		if u.GetAPIVersion() != apiVersion {
			need = true
		}
	}
	if !need {
		return objs, nil
	}
	if s.Def.Convert == nil {
		for _, u := range objs {
			u.SetAPIVersion(apiVersion)
		}
		return objs, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), conversionTimeout)
	defer cancel()
	out, err := s.Def.Convert(ctx, objs, version)
	if err != nil {
		return nil, err
	}
	if len(out) != len(objs) {
		return nil, fmt.Errorf("conversion returned %d objects for %d", len(out), len(objs))
	}
	return out, nil
}

// ---- scale ----

// Scale reads obj's Scale from the paths the version's CRD names
// (Version.Scale, which must be set).
func (s *Served) Scale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	paths := s.Ver.Scale
	u := obj.(*unstructured.Unstructured)
	specReplicas, _, err := unstructured.NestedInt64(u.Object, jsonPathFields(paths.SpecReplicas)...)
	if err != nil {
		return nil, err
	}
	statusReplicas, _, err := unstructured.NestedInt64(u.Object, jsonPathFields(paths.StatusReplicas)...)
	if err != nil {
		return nil, err
	}
	var selector string
	if paths.LabelSelector != "" {
		selector, _, _ = unstructured.NestedString(u.Object, jsonPathFields(paths.LabelSelector)...)
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: int32(specReplicas)},
		Status: autoscalingv1.ScaleStatus{Replicas: int32(statusReplicas), Selector: selector},
	}, nil
}

// SetReplicas writes the desired replicas into obj at the version's
// spec replicas path.
func (s *Served) SetReplicas(obj runtime.Object, replicas int32) error {
	u := obj.(*unstructured.Unstructured)
	return unstructured.SetNestedField(u.Object, int64(replicas), jsonPathFields(s.Ver.Scale.SpecReplicas)...)
}

// jsonPathFields splits a simple JSON path (".spec.replicas").
func jsonPathFields(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "."), ".")
}

// SpecChanged is the API server's specChanged for custom objects: anything but
// metadata, and status when withStatus.
func SpecChanged(obj, old *unstructured.Unstructured, withStatus bool) bool {
	strip := func(m map[string]interface{}) map[string]interface{} {
		out := make(map[string]interface{}, len(m))
		for k, v := range m {
			if k == "metadata" || (withStatus && k == "status") {
				continue
			}
			out[k] = v
		}
		return out
	}
	return !equality.Semantic.DeepEqual(strip(obj.Object), strip(old.Object))
}
