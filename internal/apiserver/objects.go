package apiserver

import (
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const timeSecond = time.Second

func schemaGVR(info requestInfo) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: info.Group, Version: info.Version, Resource: info.Resource}
}

func secondsDuration(s int64) time.Duration { return time.Duration(s) * time.Second }

// copyField sets dst's top-level struct field name to src's (both the same
// type). For unstructured objects it copies (or removes) the JSON field of
// that name ("Status": status).
func copyField(dst, src runtime.Object, name string) {
	if du, ok := dst.(*unstructured.Unstructured); ok {
		su := src.(*unstructured.Unstructured)
		key := strings.ToLower(name[:1]) + name[1:]
		if v, ok := su.Object[key]; ok {
			du.Object[key] = runtime.DeepCopyJSONValue(v)
		} else {
			delete(du.Object, key)
		}
		return
	}
	d := reflect.ValueOf(dst).Elem().FieldByName(name)
	sv := reflect.ValueOf(src).Elem().FieldByName(name)
	if d.IsValid() && sv.IsValid() && d.CanSet() {
		d.Set(sv)
	}
}

// setAll overwrites *dst with *src (same type).
func setAll(dst, src runtime.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

// specChanged reports whether anything outside metadata and status differs:
// the change that bumps metadata.generation. For custom resources (whose
// status is only left out when it is a subresource, as upstream does) see
// custom.SpecChanged.
func specChanged(obj, old runtime.Object) bool {
	a, b := reflect.ValueOf(obj).Elem(), reflect.ValueOf(old).Elem()
	t := a.Type()
	for i := 0; i < t.NumField(); i++ {
		switch t.Field(i).Name {
		case "TypeMeta", "ObjectMeta", "Status":
			continue
		}
		if !equality.Semantic.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			return true
		}
	}
	return false
}

func setListItems(list runtime.Object, items []runtime.Object) error {
	if items == nil {
		items = []runtime.Object{}
	}
	return meta.SetList(list, items)
}

// toPartialMetadata converts an object or list to its metadata-only form.
func toPartialMetadata(obj runtime.Object) runtime.Object {
	if meta.IsListType(obj) {
		out := &metav1.PartialObjectMetadataList{}
		out.Kind, out.APIVersion = "PartialObjectMetadataList", metav1.SchemeGroupVersion.String()
		if lm, err := meta.ListAccessor(obj); err == nil {
			out.ResourceVersion, out.Continue, out.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
		}
		_ = meta.EachListItem(obj, func(item runtime.Object) error {
			out.Items = append(out.Items, *partialMetadata(item))
			return nil
		})
		if out.Items == nil {
			out.Items = []metav1.PartialObjectMetadata{}
		}
		return out
	}
	return partialMetadata(obj)
}

func partialMetadata(obj runtime.Object) *metav1.PartialObjectMetadata {
	out := &metav1.PartialObjectMetadata{}
	out.Kind, out.APIVersion = "PartialObjectMetadata", metav1.SchemeGroupVersion.String()
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if om, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			out.ObjectMeta = *om
		}
	} else if u, ok := obj.(*unstructured.Unstructured); ok {
		if m, ok := u.Object["metadata"].(map[string]interface{}); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &out.ObjectMeta)
		}
	}
	return out
}
