package priority

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/registry/scheduling"
)

// Name is the plugin's name, as upstream's.
const Name = "Priority"

var (
	pods             = schema.GroupResource{Resource: "pods"}
	priorityClasses  = schema.GroupResource{Group: schedulingv1.GroupName, Resource: "priorityclasses"}
	priorityClassGVR = schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")
)

// New is the plugin over the server's objects: it mutates pods being
// created or updated and validates PriorityClasses being written or
// deleted.
func New(objects admission.Objects) admission.Plugin {
	p := &plugin{objects: objects}
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{pods, priorityClasses},
		Operations: []admission.Operation{admission.Create, admission.Update, admission.Delete},
		Mutate:     p.mutate, Validate: p.validate}
}

type plugin struct{ objects admission.Objects }

func (p *plugin) mutate(ctx context.Context, a *admission.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || a.GroupResource() != pods {
		return nil
	}
	switch a.Operation {
	case admission.Update:
		// Keep what was set on create; validation refuses other changes.
		if old, ok := a.OldObject.(*corev1.Pod); ok {
			if pod.Spec.Priority == nil {
				pod.Spec.Priority = old.Spec.Priority
			}
			if pod.Spec.PreemptionPolicy == nil {
				pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
			}
		}
		return nil
	case admission.Create:
		return p.admitPod(ctx, a, pod)
	}
	return nil
}

func (p *plugin) admitPod(ctx context.Context, a *admission.Attributes, pod *corev1.Pod) error {
	var priority int32
	var policy *corev1.PreemptionPolicy
	if pod.Spec.PriorityClassName == "" {
		def, err := p.globalDefault(ctx)
		if err != nil {
			return fmt.Errorf("failed to get default priority class: %v", err)
		}
		if def != nil {
			pod.Spec.PriorityClassName, priority, policy = def.Name, def.Value, def.PreemptionPolicy
		}
	} else {
		obj, err := p.objects.Get(ctx, priorityClassGVR, "", pod.Spec.PriorityClassName)
		if apierrors.IsNotFound(err) {
			return admission.Forbiddenf(a, "no PriorityClass with name %v was found", pod.Spec.PriorityClassName)
		}
		if err != nil {
			return fmt.Errorf("failed to get PriorityClass with name %s: %v", pod.Spec.PriorityClassName, err)
		}
		pc := obj.(*schedulingv1.PriorityClass)
		priority, policy = pc.Value, pc.PreemptionPolicy
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return admission.Forbiddenf(a, "the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority)
	}
	pod.Spec.Priority = &priority
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return admission.Forbiddenf(a, "the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy)
		}
		pc := *policy
		pod.Spec.PreemptionPolicy = &pc
	}
	return nil
}

func (p *plugin) validate(ctx context.Context, a *admission.Attributes) error {
	if a.GroupResource() != priorityClasses || a.Subresource != "" {
		return nil
	}
	if a.Operation == admission.Delete {
		for _, sys := range scheduling.SystemPriorityClasses() {
			if sys.Name == a.Name {
				return apierrors.NewForbidden(priorityClasses, a.Name, errors.New("this is a system priority class and cannot be deleted"))
			}
		}
		return nil
	}
	pc, ok := a.Object.(*schedulingv1.PriorityClass)
	if !ok || !pc.GlobalDefault {
		return nil
	}
	def, err := p.globalDefault(ctx)
	if err != nil {
		return fmt.Errorf("failed to get default priority class: %v", err)
	}
	if def != nil && (a.Operation == admission.Create || def.Name != pc.Name) {
		return admission.Forbiddenf(a, "PriorityClass %v is already marked as default. Only one default can exist", def.Name)
	}
	return nil
}

// globalDefault is the globalDefault class, the lowest valued one should
// a race have made several; nil when there is none.
func (p *plugin) globalDefault(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	objs, err := p.objects.List(ctx, priorityClassGVR, "")
	if err != nil {
		return nil, err
	}
	var def *schedulingv1.PriorityClass
	for _, o := range objs {
		if pc, ok := o.(*schedulingv1.PriorityClass); ok && pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def, nil
}
