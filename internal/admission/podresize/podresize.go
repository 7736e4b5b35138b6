package podresize

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "PodResizeValidator"

// The causes a refusal carries, as upstream's.
const (
	ReasonNodeCapacity        metav1.CauseType = "NodeCapacity"
	ReasonUnsupportedPlatform metav1.CauseType = "UnsupportedPlatform"
)

var (
	pods     = schema.GroupResource{Resource: "pods"}
	nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")
)

// New is the plugin over the server's objects: it validates updates of
// pods/resize.
func New(objects admission.Objects) admission.Plugin {
	p := &plugin{objects: objects}
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{pods}, Operations: []admission.Operation{admission.Update},
		Subresources: []string{"resize"}, Validate: p.validate}
}

type plugin struct{ objects admission.Objects }

func (p *plugin) validate(ctx context.Context, a *admission.Attributes) error {
	if a.Subresource != "resize" {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected a pod but got a %T", a.Object))
	}
	if pod.Spec.NodeName == "" {
		return nil
	}
	old, ok := a.OldObject.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected an old pod but got a %T", a.OldObject))
	}
	if old.Generation == pod.Generation {
		// Nothing the node has to make room for.
		return nil
	}
	obj, err := p.objects.Get(ctx, nodesGVR, "", pod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		return admission.Forbiddenf(a, "node %q not found", pod.Spec.NodeName)
	}
	if err != nil {
		return admission.Forbiddenf(a, "failed to get node %q: %w", pod.Spec.NodeName, err)
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return fmt.Errorf("node %s: read a %T", pod.Spec.NodeName, obj)
	}
	if os, ok := node.Labels[corev1.LabelOSStable]; ok && os != "linux" {
		return refusal(a, fmt.Errorf("pod resize is only supported on linux nodes, node %q is %q", node.Name, os), ReasonUnsupportedPlatform)
	}
	if err := fitsAllocatable(pod, node.Status.Allocatable); err != nil {
		return refusal(a, err, ReasonNodeCapacity)
	}
	return nil
}

// fitsAllocatable says which of the pod's cpu and memory requests exceed
// what the node can allocate, in upstream's words.
func fitsAllocatable(pod *corev1.Pod, allocatable corev1.ResourceList) error {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpu, mem := requests[corev1.ResourceCPU], requests[corev1.ResourceMemory]
	var over []string
	if allocCPU := allocatable.Cpu(); cpu.Cmp(*allocCPU) > 0 {
		over = append(over, fmt.Sprintf("cpu, requested: %d, allocatable: %d", cpu.MilliValue(), allocCPU.MilliValue()))
	}
	if allocMem := allocatable.Memory(); mem.Cmp(*allocMem) > 0 {
		over = append(over, fmt.Sprintf("memory, requested: %d, allocatable: %d", mem.Value(), allocMem.Value()))
	}
	if len(over) > 0 {
		return fmt.Errorf("node didn't have enough allocatable resources: %s", strings.Join(over, "; "))
	}
	return nil
}

// refusal is a Forbidden error carrying cause reason.
func refusal(a *admission.Attributes, err error, reason metav1.CauseType) error {
	forbidden := admission.Forbidden(a, err)
	var status *apierrors.StatusError
	if errors.As(forbidden, &status) {
		if status.ErrStatus.Details == nil {
			status.ErrStatus.Details = &metav1.StatusDetails{}
		}
		status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{Type: reason})
	}
	return forbidden
}
