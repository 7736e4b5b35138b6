package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ComputePodQOS returns the pod's quality-of-service class as upstream
// computes it at creation: only cpu and memory count, and only positive
// quantities.
//
//   - BestEffort: no container (nor the pod level) requests or limits cpu or memory.
//   - Guaranteed: every container has cpu and memory limits, and requests
//     equal limits for both (summed over containers).
//   - Burstable: anything else.
//
// When pod-level resources (spec.resources) set cpu or memory, they alone
// decide the class. Ephemeral containers never count.
func ComputePodQOS(pod *corev1.Pod) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true

	add := func(dst corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) bool {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			return false
		}
		if q.Sign() <= 0 {
			return false
		}
		v := dst[name]
		v.Add(q)
		dst[name] = v
		return true
	}
	// collect adds one set of requirements and reports whether it limits
	// both cpu and memory.
	collect := func(r corev1.ResourceRequirements) bool {
		for n, q := range r.Requests {
			add(requests, n, q)
		}
		found := map[corev1.ResourceName]bool{}
		for n, q := range r.Limits {
			if add(limits, n, q) {
				found[n] = true
			}
		}
		return found[corev1.ResourceCPU] && found[corev1.ResourceMemory]
	}

	if podLevelResourcesSet(pod) {
		guaranteed = collect(*pod.Spec.Resources)
	} else {
		for _, c := range pod.Spec.Containers {
			if !collect(c.Resources) {
				guaranteed = false
			}
		}
		for _, c := range pod.Spec.InitContainers {
			if !collect(c.Resources) {
				guaranteed = false
			}
		}
	}

	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for n, req := range requests {
			if lim, ok := limits[n]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func podLevelResourcesSet(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	if r == nil {
		return false
	}
	for _, rl := range []corev1.ResourceList{r.Requests, r.Limits} {
		for n := range rl {
			if n == corev1.ResourceCPU || n == corev1.ResourceMemory {
				return true
			}
		}
	}
	return false
}
