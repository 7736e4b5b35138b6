package runtimeclass

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "RuntimeClass"

var (
	pods            = schema.GroupResource{Resource: "pods"}
	runtimeClassGVR = nodev1.SchemeGroupVersion.WithResource("runtimeclasses")
)

// New is the plugin over the server's objects: it mutates and validates
// pods being created.
func New(objects admission.Objects) admission.Plugin {
	p := &plugin{objects: objects}
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{pods}, Operations: []admission.Operation{admission.Create},
		Mutate: p.mutate, Validate: p.validate}
}

type plugin struct{ objects admission.Objects }

// classOf is the pod's RuntimeClass (nil if it names none).
func (p *plugin) classOf(ctx context.Context, a *admission.Attributes) (*corev1.Pod, *nodev1.RuntimeClass, error) {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil, nil, apierrors.NewBadRequest("Resource was marked with kind Pod but was unable to be converted")
	}
	if pod.Spec.RuntimeClassName == nil {
		return pod, nil, nil
	}
	obj, err := p.objects.Get(ctx, runtimeClassGVR, "", *pod.Spec.RuntimeClassName)
	if apierrors.IsNotFound(err) {
		return pod, nil, admission.Forbiddenf(a, "pod rejected: RuntimeClass %q not found", *pod.Spec.RuntimeClassName)
	}
	if err != nil {
		return pod, nil, err
	}
	rc, ok := obj.(*nodev1.RuntimeClass)
	if !ok {
		return pod, nil, fmt.Errorf("runtimeclass %s: read a %T", *pod.Spec.RuntimeClassName, obj)
	}
	return pod, rc, nil
}

func (p *plugin) mutate(ctx context.Context, a *admission.Attributes) error {
	pod, rc, err := p.classOf(ctx, a)
	if err != nil || rc == nil {
		return err
	}
	if rc.Overhead != nil {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return admission.Forbiddenf(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if s := rc.Scheduling; s != nil {
		if len(s.NodeSelector) > 0 && pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		for key, value := range s.NodeSelector {
			if podValue, ok := pod.Spec.NodeSelector[key]; ok && podValue != value {
				return admission.Forbiddenf(a, "conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", key, value, key, podValue)
			}
			pod.Spec.NodeSelector[key] = value
		}
		pod.Spec.Tolerations = mergeTolerations(pod.Spec.Tolerations, s.Tolerations)
	}
	return nil
}

func (p *plugin) validate(ctx context.Context, a *admission.Attributes) error {
	pod, rc, err := p.classOf(ctx, a)
	if err != nil {
		return err
	}
	if rc != nil && rc.Overhead != nil {
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return admission.Forbiddenf(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
	} else if pod.Spec.Overhead != nil {
		return admission.Forbiddenf(a, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	return nil
}

// mergeTolerations is first then second, leaving out each toleration
// another one kept (or a later, different one) already covers.
func mergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	all := append(append([]corev1.Toleration(nil), first...), second...)
	var merged []corev1.Toleration
next:
	for i, t := range all {
		for _, kept := range merged {
			if covers(kept, t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(t, later) && covers(later, t) {
				continue next
			}
		}
		merged = append(merged, t)
	}
	return merged
}

// covers reports whether every taint t tolerates, wide tolerates too.
func covers(wide, t corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(wide, t) {
		return true
	}
	if t.Key != wide.Key && (wide.Key != "" || wide.Operator != corev1.TolerationOpExists) {
		return false
	}
	if wide.Effect != "" && t.Effect != wide.Effect {
		return false
	}
	if wide.Effect == corev1.TaintEffectNoExecute && wide.TolerationSeconds != nil &&
		(t.TolerationSeconds == nil || *t.TolerationSeconds > *wide.TolerationSeconds) {
		return false
	}
	switch wide.Operator {
	case corev1.TolerationOpEqual, "":
		return t.Operator == corev1.TolerationOpEqual && t.Value == wide.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}
