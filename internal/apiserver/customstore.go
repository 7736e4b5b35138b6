package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// conversionTimeout bounds one conversion of stored objects (a webhook call).
const conversionTimeout = 30 * time.Second

// decodeCustom reads a stored custom object: it converts it from the
// storage version to the store's version, prunes it with that version's
// schema and applies its defaults, as upstream's storage decoder does.
func (s *resourceStore) decodeCustom(value []byte, rev int64) (runtime.Object, error) {
	var m map[string]interface{}
	if err := utiljson.Unmarshal(value, &m); err != nil {
		return nil, fmt.Errorf("decoding stored %s: %w", s.gr, err)
	}
	u := &unstructured.Unstructured{Object: m}
	out, err := s.cr.convert([]*unstructured.Unstructured{u}, s.res.Kind.Version)
	if err != nil {
		return nil, err
	}
	u = out[0]
	if s.cr.ver.Coerce != nil {
		if _, err := s.cr.ver.Coerce(u, CoerceOptions{FromStorage: true}); err != nil {
			return nil, fmt.Errorf("decoding stored %s: %w", s.gr, err)
		}
	}
	if s.res.Strategy.Default != nil {
		s.res.Strategy.Default(u)
	}
	if rev > 0 {
		u.SetResourceVersion(strconv.FormatInt(rev, 10))
	}
	return u, nil
}

// encodeCustom produces the stored form of a custom object: JSON in the
// storage version, without resourceVersion.
func (s *resourceStore) encodeCustom(obj runtime.Object) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s: expected an unstructured object, got %T", s.gr, obj)
	}
	u.SetGroupVersionKind(s.res.Kind)
	c := u.DeepCopy()
	c.SetResourceVersion("")
	out, err := s.cr.convert([]*unstructured.Unstructured{c}, s.cr.def.StorageVersion)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out[0].Object)
}

// convert brings objs to version of the resource's group: by relabelling
// apiVersion (strategy None) or through the resource's converter.
func (c *customInfo) convert(objs []*unstructured.Unstructured, version string) ([]*unstructured.Unstructured, error) {
	apiVersion := c.def.Group + "/" + version
	need := false
	for _, u := range objs {
		if u.GetAPIVersion() != apiVersion {
			need = true
		}
	}
	if !need {
		return objs, nil
	}
	if c.def.Convert == nil {
		for _, u := range objs {
			u.SetAPIVersion(apiVersion)
		}
		return objs, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), conversionTimeout)
	defer cancel()
	out, err := c.def.Convert(ctx, objs, version)
	if err != nil {
		return nil, err
	}
	if len(out) != len(objs) {
		return nil, fmt.Errorf("conversion returned %d objects for %d", len(out), len(objs))
	}
	return out, nil
}

// ---- scale ----

// scaleOf reads obj's Scale: for a custom resource from the paths its CRD
// names, for a built-in one from spec.replicas, status.replicas and the
// selector.
func (rs *resourceStore) scaleOf(obj runtime.Object) (*autoscalingv1.Scale, error) {
	if rs.cr == nil || rs.cr.ver.Scale == nil {
		return scaleOf(obj)
	}
	paths := rs.cr.ver.Scale
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

// setReplicas writes the desired replicas into obj.
func (rs *resourceStore) setReplicas(obj runtime.Object, replicas int32) error {
	if rs.cr == nil || rs.cr.ver.Scale == nil {
		return setReplicas(obj, replicas)
	}
	u := obj.(*unstructured.Unstructured)
	return unstructured.SetNestedField(u.Object, int64(replicas), jsonPathFields(rs.cr.ver.Scale.SpecReplicas)...)
}

// jsonPathFields splits a simple JSON path (".spec.replicas").
func jsonPathFields(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "."), ".")
}
