package quota

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"

	"plainkube.dev/plainkube/internal/api/podspec"
)

var podCountName = ObjectCountName(schema.GroupResource{Resource: "pods"})

// podResources are the names a pod's usage counts toward, besides
// hugepages and extended resources.
var podResources = []corev1.ResourceName{
	podCountName,
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods,
}

// constrained are the names whose quota requires every container to say
// how much it uses.
var constrained = sets.New[corev1.ResourceName](
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
)

type pods struct{}

func (pods) GroupResource() schema.GroupResource { return schema.GroupResource{Resource: "pods"} }

// Handles: creates; an update that makes a pod terminating or not (its
// activeDeadlineSeconds), which moves it between scopes; a resize.
func (pods) Handles(op, subresource string, obj, old runtime.Object) bool {
	switch subresource {
	case "":
		if op == Update {
			pod, ok1 := obj.(*corev1.Pod)
			oldPod, ok2 := old.(*corev1.Pod)
			return ok1 && ok2 && IsTerminating(pod) != IsTerminating(oldPod)
		}
		return op == Create
	case "resize":
		return op == Update
	}
	return false
}

func (pods) MatchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	out := intersect(names, podResources)
	for _, n := range names {
		if strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix) ||
			strings.HasPrefix(string(n), corev1.ResourceRequestsHugePagesPrefix) ||
			isExtendedRequest(n) {
			out = append(out, n)
		}
	}
	return out
}

// isExtendedRequest: requests.<an extended resource>, such as
// requests.nvidia.com/gpu.
func isExtendedRequest(n corev1.ResourceName) bool {
	rest, ok := strings.CutPrefix(string(n), corev1.DefaultResourceRequestsPrefix)
	return ok && isExtended(corev1.ResourceName(rest))
}

// isExtended: a resource named with a domain other than kubernetes.io's,
// not a hugepages size.
func isExtended(n corev1.ResourceName) bool {
	s := string(n)
	if strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) || !strings.Contains(s, "/") {
		return false
	}
	domain, _, _ := strings.Cut(s, "/")
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

func (pods) MatchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false, fmt.Errorf("expect *v1.Pod, got %T", obj)
	}
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return IsTerminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !IsTerminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return isBestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !isBestEffort(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		return priorityClassMatches(pod, sel)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod), nil
	}
	return false, nil
}

// priorityClassMatches evaluates a PriorityClass requirement (In, NotIn,
// Exists, DoesNotExist) on the pod's priorityClassName.
func priorityClassMatches(pod *corev1.Pod, sel corev1.ScopedResourceSelectorRequirement) (bool, error) {
	var op selection.Operator
	switch sel.Operator {
	case corev1.ScopeSelectorOpIn:
		op = selection.In
	case corev1.ScopeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.ScopeSelectorOpExists:
		op = selection.Exists
	case corev1.ScopeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return false, fmt.Errorf("%q is not a valid scope selector operator", sel.Operator)
	}
	req, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
	if err != nil {
		return false, fmt.Errorf("failed to parse and convert selector: %v", err)
	}
	var set labels.Set
	if pod.Spec.PriorityClassName != "" {
		set = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pod.Spec.PriorityClassName}
	}
	return labels.NewSelector().Add(*req).Matches(set), nil
}

func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) != 0 || t.NamespaceSelector != nil }
	var terms []*corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if cross(t) {
			return true
		}
	}
	return false
}

// Constraints: under a quota on cpu or memory (requests or limits), every
// container must give that value; upstream's message names the missing
// resources and containers ("must specify limits.cpu for: app; …").
func (pods) Constraints(required []corev1.ResourceName, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("expect *v1.Pod, got %T", obj)
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return nil
	}
	want := sets.New(required...).Intersection(constrained)
	missing := map[corev1.ResourceName]sets.Set[string]{}
	check := func(c *corev1.Container) {
		have := sets.New(Names(containerUsage(c.Resources.Requests, c.Resources.Limits))...)
		for _, n := range want.Difference(have).UnsortedList() {
			if missing[n] == nil {
				missing[n] = sets.New[string]()
			}
			missing[n].Insert(c.Name)
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for n := range missing {
		names = append(names, string(n))
	}
	sort.Strings(names)
	msgs := make([]string, len(names))
	for i, n := range names {
		msgs[i] = n + " for: " + strings.Join(sets.List(missing[corev1.ResourceName(n)]), ",")
	}
	return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
}

// containerUsage is what requests and limits count toward: pods=1, cpu
// and memory and ephemeral-storage requests both bare and as requests.*,
// limits.*, hugepages and extended resources.
func containerUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: one()}
	for _, r := range []struct{ bare, req, lim corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if v, ok := requests[r.bare]; ok {
			out[r.bare], out[r.req] = v, v
		}
		if v, ok := limits[r.bare]; ok {
			out[r.lim] = v
		}
	}
	for n, v := range requests {
		switch {
		case strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix):
			out[n] = v
			out[corev1.DefaultResourceRequestsPrefix+n] = v
		case isExtended(n):
			out[corev1.DefaultResourceRequestsPrefix+n] = v
		}
	}
	return out
}

// Usage: a pod counts under count/pods always; its pods, cpu, memory…
// only while it is not terminal (Succeeded, Failed, or past its deletion
// grace period).
func (pods) Usage(obj runtime.Object, now time.Time) (corev1.ResourceList, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("expect *v1.Pod, got %T", obj)
	}
	out := corev1.ResourceList{podCountName: one()}
	if !Counts(pod, now) {
		return out, nil
	}
	opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
	return Add(out, containerUsage(resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts))), nil
}

// Counts reports whether a pod's compute resources count against quota:
// not once it has Succeeded or Failed, nor after its deletion grace period.
func Counts(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if now.After(end) {
			return false
		}
	}
	return true
}

// IsTerminating: a pod with activeDeadlineSeconds (the Terminating scope).
func IsTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

func isBestEffort(pod *corev1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == corev1.PodQOSBestEffort
	}
	return podspec.ComputePodQOS(pod) == corev1.PodQOSBestEffort
}
