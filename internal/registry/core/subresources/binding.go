package subresources

import (
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"plainkube.dev/plainkube/internal/registry"
)

// Binding serves pods/binding: the scheduler's assignment of a pod to a
// node, once. It sets spec.nodeName, the binding's annotations and labels
// (as upstream with PodTopologyLabelsAdmission on: the PodTopologyLabels
// admission plugin puts the node's zone and region there) and the
// PodScheduled condition.
var Binding = registry.Handler{Serve: serveBinding, KeepsGeneration: true}

func serveBinding(rq *registry.Request) error {
	body, err := createBody(rq)
	if err != nil {
		return err
	}
	gvk := corev1.SchemeGroupVersion.WithKind("Binding")
	obj, err := rq.API.Decode(body, gvk, &corev1.Binding{})
	if err != nil {
		return err
	}
	b := obj.(*corev1.Binding)
	if b.Name != "" && b.Name != rq.Name {
		return badRequest("the name of the object (%s) does not match the name on the URL (%s)", b.Name, rq.Name)
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" || b.Target.Name == "" {
		return apierrors.NewInvalid(gvk.GroupKind(), rq.Name, fieldErrors("target", b.Target.Name, "must name a Node"))
	}
	if err := rq.API.AdmitCreate(b); err != nil {
		return err
	}
	gr := rq.Resource.GroupResource()
	_, err = rq.API.Update("kube-scheduler", func(current runtime.Object) (runtime.Object, error) {
		pod := current.(*corev1.Pod)
		if b.UID != "" && b.UID != pod.UID {
			return nil, apierrors.NewConflict(gr, pod.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", b.UID, pod.UID))
		}
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(gr, pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(gr, pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		for k, v := range b.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		for k, v := range b.Labels {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[k] = v
		}
		setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(rq.API.Now().UTC().Truncate(time.Second))})
		pod.ResourceVersion = ""
		return pod, nil
	})
	if err != nil {
		return err
	}
	rq.API.WriteObject(http.StatusCreated, created())
	return nil
}

func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}
