package registry

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Scale is how a resource's scale subresource maps onto its objects: the
// API server serves get, update, patch and apply of the autoscaling/v1
// Scale (and admits it) generically, through these two functions.
type Scale struct {
	// Of is obj's Scale.
	Of func(obj runtime.Object) (*autoscalingv1.Scale, error)
	// SetReplicas writes the desired replicas into obj.
	SetReplicas func(obj runtime.Object, replicas int32) error
}

// ReplicasScale is the Scale of the workloads (Deployments, ReplicaSets,
// StatefulSets, ReplicationControllers): spec.replicas (1 when unset),
// status.replicas and spec.selector as a selector string (a label
// selector, or a ReplicationController's map).
var ReplicasScale = &Scale{Of: replicasScale, SetReplicas: setSpecReplicas}

func replicasScale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	sc := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()},
	}
	replicas, found, _ := unstructured.NestedInt64(u, "spec", "replicas")
	if !found {
		replicas = 1
	}
	sc.Spec.Replicas = int32(replicas)
	statusReplicas, _, _ := unstructured.NestedInt64(u, "status", "replicas")
	sc.Status.Replicas = int32(statusReplicas)
	if sel, found, _ := unstructured.NestedMap(u, "spec", "selector"); found {
		if _, isLabelSelector := sel["matchLabels"]; isLabelSelector || sel["matchExpressions"] != nil {
			ls := &metav1.LabelSelector{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, ls); err == nil {
				if s, err := metav1.LabelSelectorAsSelector(ls); err == nil {
					sc.Status.Selector = s.String()
				}
			}
		} else {
			set := labels.Set{}
			for k, v := range sel {
				set[k] = fmt.Sprint(v)
			}
			sc.Status.Selector = labels.SelectorFromSet(set).String()
		}
	}
	return sc, nil
}

func setSpecReplicas(obj runtime.Object, replicas int32) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	if err := unstructured.SetNestedField(u, int64(replicas), "spec", "replicas"); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj)
}
