package rootcacert

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// State is what one look at a namespace sees: the namespace, its
// published ConfigMap (nil if none) and the CA bundle to publish.
type State struct {
	Namespace *corev1.Namespace
	Current   *corev1.ConfigMap
	CA        []byte
}

// Plan is the ConfigMap to write (created when State.Current is nil); nil:
// nothing to write.
type Plan struct {
	Write *corev1.ConfigMap
}

// plan publishes the bundle in an active namespace whose ConfigMap is
// missing or not right; a namespace terminating or being deleted is left
// alone.
func plan(st State) Plan {
	ns := st.Namespace
	if ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
		return Plan{}
	}
	if want, write := Desired(ns.Name, st.Current, st.CA); write {
		return Plan{Write: want}
	}
	return Plan{}
}

// Desired returns the ConfigMap a namespace should have given the current
// one (nil if none) and whether it has to be written; current is returned
// unchanged when it is right.
func Desired(namespace string, current *corev1.ConfigMap, caPEM []byte) (*corev1.ConfigMap, bool) {
	data := map[string]string{DataKey: string(caPEM)}
	if current == nil {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ConfigMapName,
				Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data: data,
		}, true
	}
	if maps.Equal(current.Data, data) && len(current.BinaryData) == 0 && current.Annotations[DescriptionAnnotation] != "" {
		return current, false
	}
	want := current.DeepCopy()
	want.Data = data
	want.BinaryData = nil
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[DescriptionAnnotation] = Description
	return want, true
}
