package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MergeResize is what a write through pods/resize may change: the stored
// pod old with, from pod, its containers' and init containers' resources
// and resizePolicy, its pod-level resources, and managedFields. Everything
// else stays as stored. When the containers were added, removed, renamed
// or reordered, pod is returned unchanged so that ValidatePodResize
// reports it.
func MergeResize(pod, old *corev1.Pod) *corev1.Pod {
	if len(pod.Spec.Containers) != len(old.Spec.Containers) || len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		return pod.DeepCopy()
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name != old.Spec.Containers[i].Name {
			return pod.DeepCopy()
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name != old.Spec.InitContainers[i].Name {
			return pod.DeepCopy()
		}
	}
	out := old.DeepCopy()
	out.ManagedFields = pod.ManagedFields
	copyResizable := func(dst, src []corev1.Container) {
		for i := range src {
			dst[i].Resources = *src[i].Resources.DeepCopy()
			dst[i].ResizePolicy = append([]corev1.ContainerResizePolicy(nil), src[i].ResizePolicy...)
		}
	}
	copyResizable(out.Spec.Containers, pod.Spec.Containers)
	copyResizable(out.Spec.InitContainers, pod.Spec.InitContainers)
	// A client that does not know pod-level resources keeps them.
	if pod.Spec.Resources != nil {
		out.Spec.Resources = pod.Spec.Resources.DeepCopy()
	}
	return out
}

// ValidatePodResize checks a write through pods/resize as upstream does
// (InPlacePodVerticalScaling, its init container and pod-level resources
// parts as enabled by default in v1.37): the new pod is valid; static and
// Windows pods cannot be resized; the QoS class stays; the node reports
// the resources of running containers; containers are neither added,
// removed, renamed nor reordered; no request or limit is removed; only cpu
// and memory change; a non-sidecar init container with a RestartContainer
// policy is not resized; volumes do not change.
func ValidatePodResize(pod, old *corev1.Pod) field.ErrorList {
	allErrs := ValidatePod(pod)
	if _, ok := old.Annotations[mirrorPodAnnotation]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if old.Spec.OS != nil && old.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	specPath := field.NewPath("spec")
	oldQOS := old.Status.QOSClass
	if oldQOS == "" {
		oldQOS = ComputePodQOS(old)
	}
	if oldQOS != ComputePodQOS(pod) {
		allErrs = append(allErrs, field.Invalid(specPath, pod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !nodeSupportsResize(old) {
		allErrs = append(allErrs, field.Forbidden(specPath, "Pod running on node without support for resize"))
	}

	masked := pod.Spec.DeepCopy()
	if hasPodLevelResources(old) || hasPodLevelResources(pod) {
		allErrs = append(allErrs, validatePodLevelResize(pod, old, masked, specPath)...)
	}

	if errs := validateResizeOrdering(pod, old, specPath); len(errs) > 0 {
		return append(allErrs, errs...)
	}
	for i := range old.Spec.InitContainers {
		allErrs = append(allErrs, validateNothingRemoved(&pod.Spec.InitContainers[i].Resources, &old.Spec.InitContainers[i].Resources,
			specPath.Child("initContainers").Index(i).Child("resources"))...)
	}
	for i := range old.Spec.Containers {
		allErrs = append(allErrs, validateNothingRemoved(&pod.Spec.Containers[i].Resources, &old.Spec.Containers[i].Resources,
			specPath.Child("containers").Index(i).Child("resources"))...)
	}

	for i := range masked.Containers {
		c := &masked.Containers[i]
		keepOldCPUMemory(c, &old.Spec.Containers[i])
		if !equality.Semantic.DeepEqual(*c, old.Spec.Containers[i]) {
			allErrs = append(allErrs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
		}
	}
	for i := range masked.InitContainers {
		c := &masked.InitContainers[i]
		changed := !equality.Semantic.DeepEqual(*c, old.Spec.InitContainers[i])
		keepOldCPUMemory(c, &old.Spec.InitContainers[i])
		if !equality.Semantic.DeepEqual(*c, old.Spec.InitContainers[i]) {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("initContainers").Index(i), "only cpu and memory resources for init or sidecar containers are mutable"))
		}
		if changed && !isSidecar(c) {
			for _, p := range c.ResizePolicy {
				if p.RestartPolicy == corev1.RestartContainer {
					allErrs = append(allErrs, field.Forbidden(specPath.Child("initContainers").Index(i), "non-sidecar init containers with a resize policy of RestartContainer cannot be resized"))
				}
			}
		}
	}
	if !equality.Semantic.DeepEqual(pod.Spec.Volumes, old.Spec.Volumes) {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("volumes"), "volumes are immutable on resize when InPlacePodVerticalScalingMemoryBackedVolumes feature gate is disabled"))
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	if !equality.Semantic.DeepEqual(*masked, old.Spec) {
		allErrs = append(allErrs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
	}
	return allErrs
}

// nodeSupportsResize: a pod whose first running container has no
// reported resources runs on a node that cannot resize it (upstream's
// version-skew rule); with no running container, it is assumed to.
func nodeSupportsResize(pod *corev1.Pod) bool {
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Running != nil {
			return s.Resources != nil
		}
	}
	return true
}

func hasPodLevelResources(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	return r != nil && len(r.Requests)+len(r.Limits) > 0
}

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func validateResizeOrdering(pod, old *corev1.Pod, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	check := func(newC, oldC []corev1.Container, name string) {
		p := specPath.Child(name)
		if len(newC) != len(oldC) {
			allErrs = append(allErrs, field.Forbidden(p, name+" may not be added or removed on resize"))
			return
		}
		for i := range oldC {
			if newC[i].Name != oldC[i].Name {
				allErrs = append(allErrs, field.Forbidden(p.Index(i).Child("name"), name+" may not be renamed or reordered on resize"))
			}
		}
	}
	check(pod.Spec.Containers, old.Spec.Containers, "containers")
	check(pod.Spec.InitContainers, old.Spec.InitContainers, "initContainers")
	return allErrs
}

func validateNothingRemoved(newR, oldR *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if resourcesRemoved(newR.Requests, oldR.Requests) {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("requests"), "resource requests cannot be removed"))
	}
	if resourcesRemoved(newR.Limits, oldR.Limits) {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("limits"), "resource limits cannot be removed"))
	}
	return allErrs
}

func resourcesRemoved(list, old corev1.ResourceList) bool {
	for name := range old {
		if _, ok := list[name]; !ok {
			return true
		}
	}
	return false
}

// validatePodLevelResize checks pod-level resources on resize, and sets
// masked's to what they would be had only cpu and memory changed.
func validatePodLevelResize(pod, old *corev1.Pod, masked *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	if old.Spec.Resources != nil && pod.Spec.Resources == nil {
		return field.ErrorList{field.Forbidden(specPath.Child("resources"), "pod-level resources cannot be removed")}
	}
	var allErrs field.ErrorList
	if old.Spec.Resources != nil {
		if resourcesRemoved(pod.Spec.Resources.Requests, old.Spec.Resources.Requests) {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("resources", "requests"), "pod-level resource requests cannot be removed"))
		}
		if resourcesRemoved(pod.Spec.Resources.Limits, old.Spec.Resources.Limits) {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("resources", "limits"), "pod-level resource limits cannot be removed"))
		}
	}
	if masked.Resources != nil {
		var oldReq, oldLim corev1.ResourceList
		if old.Spec.Resources != nil {
			oldReq, oldLim = old.Spec.Resources.Requests, old.Spec.Resources.Limits
		}
		masked.Resources.Requests = withOldCPUMemory(masked.Resources.Requests, oldReq)
		masked.Resources.Limits = withOldCPUMemory(masked.Resources.Limits, oldLim)
		if old.Spec.Resources == nil && len(masked.Resources.Requests) == 0 && len(masked.Resources.Limits) == 0 && len(masked.Resources.Claims) == 0 {
			masked.Resources = nil
		}
	}
	if !equality.Semantic.DeepEqual(masked.Resources, old.Spec.Resources) {
		allErrs = append(allErrs, field.Forbidden(specPath, "only cpu and memory resources are mutable at pod-level"))
	}
	return allErrs
}

// keepOldCPUMemory sets c's cpu and memory requests and limits to old's,
// keeping c's other resources.
func keepOldCPUMemory(c, old *corev1.Container) {
	c.Resources.Limits = withOldCPUMemory(c.Resources.Limits, old.Resources.Limits)
	c.Resources.Requests = withOldCPUMemory(c.Resources.Requests, old.Resources.Requests)
}

func withOldCPUMemory(list, old corev1.ResourceList) corev1.ResourceList {
	if list == nil && old == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for k, v := range list {
		if k != corev1.ResourceCPU && k != corev1.ResourceMemory {
			out[k] = v
		}
	}
	for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if v, ok := old[k]; ok {
			out[k] = v
		}
	}
	return out
}
