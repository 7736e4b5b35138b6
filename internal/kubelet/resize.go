package kubelet

import (
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/kubelet/podstatus"
	"plainkube.dev/plainkube/internal/kubelet/runtime"
)

// In-place resize (InPlacePodVerticalScaling), as upstream's kubelet does
// it: the agent allocates a pod's container resources once they fit the
// node (allocated), runs and resizes its containers to the allocation
// through the runtime (applied, what each running container has), and
// reports both in the container statuses, with the PodResizePending and
// PodResizeInProgress conditions while they differ from the spec.

// resizeState is what the agent keeps of allocations and of the resources
// its containers run with. It is safe for concurrent use.
type resizeState struct {
	mu sync.Mutex
	// allocated has, by pod, the resources allocated to each container
	// (by name).
	allocated map[types.UID]map[string]corev1.ResourceRequirements
	// applied has, by pod and container ID, the resources the container
	// runs with.
	applied map[types.UID]map[string]corev1.ResourceRequirements
}

// allocate is pod as the node runs it: its containers' resources are the
// allocated ones. A pod seen for the first time is allocated its spec; a
// later change of the spec is allocated when the pod's requests fit what
// the node's allocatable leaves besides the other pods' allocations
// (others, asked for only then), and otherwise the returned condition says
// why it waits.
func (s *resizeState) allocate(pod *corev1.Pod, allocatable corev1.ResourceList, others func() ([]*corev1.Pod, error)) (*corev1.Pod, *corev1.PodCondition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.allocated == nil {
		s.allocated = map[types.UID]map[string]corev1.ResourceRequirements{}
	}
	alloc, ok := s.allocated[pod.UID]
	if !ok {
		alloc = specResources(pod)
		s.allocated[pod.UID] = alloc
		return pod, nil, nil
	}
	want := specResources(pod)
	if resourcesEqual(want, alloc) {
		return pod, nil, nil
	}
	all, err := others()
	if err != nil {
		return pod, nil, err
	}
	if cond := s.fits(pod, allocatable, all); cond != nil {
		return withResources(pod, alloc), cond, nil
	}
	s.allocated[pod.UID] = want
	return pod, nil, nil
}

// fits is nil when pod's requests fit allocatable besides the others'
// allocated requests, and otherwise the Deferred PodResizePending
// condition (podstatus.ResizeDeferred). A request beyond the node's
// allocatable itself is deferred too: upstream's Infeasible is not
// reported.
func (s *resizeState) fits(pod *corev1.Pod, allocatable corev1.ResourceList, others []*corev1.Pod) *corev1.PodCondition {
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	used := corev1.ResourceList{}
	for _, o := range others {
		if o.UID == pod.UID {
			continue
		}
		if a, ok := s.allocated[o.UID]; ok {
			o = withResources(o, a)
		}
		for n, q := range resourcehelper.PodRequests(o, resourcehelper.PodResourcesOptions{}) {
			v := used[n]
			v.Add(q)
			used[n] = v
		}
	}
	return podstatus.ResizeDeferred(req, used, allocatable)
}

// ran records the resources container id of pod uid was started or
// resized with.
func (s *resizeState) ran(uid types.UID, id string, r corev1.ResourceRequirements) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appliedOf(uid)[id] = *r.DeepCopy()
}

func (s *resizeState) appliedOf(uid types.UID) map[string]corev1.ResourceRequirements {
	if s.applied == nil {
		s.applied = map[types.UID]map[string]corev1.ResourceRequirements{}
	}
	m, ok := s.applied[uid]
	if !ok {
		m = map[string]corev1.ResourceRequirements{}
		s.applied[uid] = m
	}
	return m
}

// appliedTo is the resources of each of obs's running containers of pod,
// by ID. A container the agent did not start (it ran before the agent
// restarted) has the resources its last status reported, or else the
// allocated ones.
func (s *resizeState) appliedTo(pod *corev1.Pod, obs runtime.Pod) map[string]corev1.ResourceRequirements {
	s.mu.Lock()
	defer s.mu.Unlock()
	applied := s.appliedOf(pod.UID)
	reported := map[string]*corev1.ResourceRequirements{}
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if cs.Resources != nil {
			reported[cs.ContainerID] = cs.Resources
		}
	}
	out := map[string]corev1.ResourceRequirements{}
	for name, runs := range obs.Containers {
		if len(runs) == 0 || runs[0].State != runtime.Running {
			continue
		}
		id := runs[0].ID
		r, ok := applied[id]
		if !ok {
			if rep, found := reported[idScheme+id]; found {
				r = *rep.DeepCopy()
			} else if c := podutil.Container(pod, name); c != nil {
				r = *c.Resources.DeepCopy()
			}
			applied[id] = r
		}
		out[id] = r
	}
	return out
}

// forget drops what is kept of a pod that is gone.
func (s *resizeState) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.allocated, uid)
	delete(s.applied, uid)
}

// specResources is the resources of each of pod's containers, by name.
func specResources(pod *corev1.Pod) map[string]corev1.ResourceRequirements {
	out := map[string]corev1.ResourceRequirements{}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		out[c.Name] = *c.Resources.DeepCopy()
	}
	return out
}

func resourcesEqual(a, b map[string]corev1.ResourceRequirements) bool {
	if len(a) != len(b) {
		return false
	}
	for n, r := range a {
		if o, ok := b[n]; !ok || !equality.Semantic.DeepEqual(r, o) {
			return false
		}
	}
	return true
}

// withResources is a copy of pod whose containers have the resources r.
func withResources(pod *corev1.Pod, r map[string]corev1.ResourceRequirements) *corev1.Pod {
	out := pod.DeepCopy()
	for _, cs := range [][]corev1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			if v, ok := r[cs[i].Name]; ok {
				cs[i].Resources = *v.DeepCopy()
			}
		}
	}
	return out
}

// cpuMemoryDiffer reports which of cpu and memory differ between a
// container's applied and allocated resources (requests or limits).
func cpuMemoryDiffer(applied, allocated corev1.ResourceRequirements) (cpu, memory bool) {
	differ := func(n corev1.ResourceName) bool {
		ar, aok := applied.Requests[n]
		br, bok := allocated.Requests[n]
		al, alok := applied.Limits[n]
		bl, blok := allocated.Limits[n]
		return aok != bok || alok != blok || ar.Cmp(br) != 0 || al.Cmp(bl) != 0
	}
	return differ(corev1.ResourceCPU), differ(corev1.ResourceMemory)
}

// restartsOnResize reports whether c's resize policy restarts it for a
// change of cpu or memory (the default is NotRequired).
func restartsOnResize(c *corev1.Container, cpu, memory bool) bool {
	for _, p := range c.ResizePolicy {
		if p.RestartPolicy != corev1.RestartContainer {
			continue
		}
		if (p.ResourceName == corev1.ResourceCPU && cpu) || (p.ResourceName == corev1.ResourceMemory && memory) {
			return true
		}
	}
	return false
}

// planResize is what brings pod's running containers that no action of
// planned touches to their allocated resources: an update of their
// resources, or a restart when their resize policy asks for one.
func planResize(pod *corev1.Pod, obs observed, planned []action) []action {
	var acts []action
	touched := map[string]bool{}
	for _, a := range planned {
		touched[a.Container] = true
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		runs := obs.Containers[c.Name]
		if touched[c.Name] || len(runs) == 0 || runs[0].State != runtime.Running {
			continue
		}
		applied, ok := obs.Applied[runs[0].ID]
		if !ok {
			continue
		}
		cpu, memory := cpuMemoryDiffer(applied, c.Resources)
		if !cpu && !memory {
			continue
		}
		if restartsOnResize(&c, cpu, memory) {
			acts = append(acts,
				action{Kind: actStopContainer, ID: runs[0].ID, Container: c.Name, Grace: gracePeriod(pod),
					Message: fmt.Sprintf("Container %s resize requires restart", c.Name)},
				action{Kind: actStartContainer, Container: c.Name, Attempt: runs[0].Attempt + 1})
			continue
		}
		acts = append(acts, action{Kind: actResizeContainer, ID: runs[0].ID, Container: c.Name})
	}
	return acts
}

// setResizeStatus reports the allocation in st: each container's
// allocatedResources (its allocated requests) and resources (what a
// running one runs with, else its allocation), and the resize conditions:
// PodResizePending as obs says, PodResizeInProgress while a running
// container's resources differ from its allocation.
func setResizeStatus(pod *corev1.Pod, st *corev1.PodStatus, obs observed, now time.Time) {
	inProgress := false
	fill := func(statuses []corev1.ContainerStatus) {
		for i := range statuses {
			cs := &statuses[i]
			c := podutil.Container(pod, cs.Name)
			if c == nil {
				continue
			}
			var running *corev1.ResourceRequirements
			if runs := obs.Containers[c.Name]; len(runs) > 0 && runs[0].State == runtime.Running {
				if applied, ok := obs.Applied[runs[0].ID]; ok {
					running = &applied
					if cpu, memory := cpuMemoryDiffer(applied, c.Resources); cpu || memory {
						inProgress = true
					}
				}
			}
			podstatus.SetAllocation(cs, c.Resources, running)
		}
	}
	fill(st.InitContainerStatuses)
	fill(st.ContainerStatuses)
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c corev1.PodCondition) bool {
		return (c.Type == corev1.PodResizePending && obs.ResizePending == nil) || (c.Type == corev1.PodResizeInProgress && !inProgress)
	})
	if terminal(st.Phase) {
		return
	}
	if c := obs.ResizePending; c != nil {
		c := *c
		c.ObservedGeneration = pod.Generation
		podstatus.SetCondition(st, c, now)
	}
	if inProgress {
		podstatus.SetCondition(st, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, ObservedGeneration: pod.Generation}, now)
	}
}

// allocate is pod as the node runs it, and the PodResizePending condition
// of a resize that waits (see resizeState.allocate); the other pods, listed
// only for a resize, are the active ones the node runs.
func (a *Agent) allocate(pod *corev1.Pod) (*corev1.Pod, *corev1.PodCondition, error) {
	if pod.DeletionTimestamp != nil || terminal(pod.Status.Phase) {
		return pod, nil, nil
	}
	return a.resize.allocate(pod, a.allocatable(), func() ([]*corev1.Pod, error) {
		all, err := a.pods.List(labels.Everything())
		return slices.DeleteFunc(all, func(o *corev1.Pod) bool {
			return o.UID == pod.UID || terminal(o.Status.Phase) || !a.admitted.has(o.UID)
		}), err
	})
}
