package endpointutil

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	corelisters "k8s.io/client-go/listers/core/v1"

	"plainkube.dev/plainkube/internal/api/podutil"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ShouldPodBeInEndpoints reports whether a pod belongs in a Service's
// endpoints at all: it has an IP and has not finished; a terminating pod
// (one with a deletionTimestamp) only if includeTerminating.
func ShouldPodBeInEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	if podutil.IsTerminal(pod) {
		return false
	}
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	if !includeTerminating && pod.DeletionTimestamp != nil {
		return false
	}
	return true
}

// ShouldSetHostname reports whether the pod's endpoint carries its
// hostname: the pod sets spec.hostname and its spec.subdomain names this
// (headless) Service in the same namespace.
func ShouldSetHostname(pod *corev1.Pod, svc *corev1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && svc.Namespace == pod.Namespace
}

// FindPort resolves a Service port's targetPort for one pod: a number is
// used as is (0, which the API server defaults away, means the service
// port); a name is looked up among the named ports of the pod's containers
// and of its sidecars (init containers with restartPolicy Always), with the
// same protocol. A pod without that name has no such port.
func FindPort(pod *corev1.Pod, svcPort *corev1.ServicePort) (int32, error) {
	tp := svcPort.TargetPort
	switch tp.Type {
	case intstr.String:
		if tp.StrVal == "" {
			return svcPort.Port, nil
		}
		proto := svcPort.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		match := func(c *corev1.Container) (int32, bool) {
			for _, p := range c.Ports {
				pp := p.Protocol
				if pp == "" {
					pp = corev1.ProtocolTCP
				}
				if p.Name == tp.StrVal && pp == proto {
					return p.ContainerPort, true
				}
			}
			return 0, false
		}
		for i := range pod.Spec.Containers {
			if n, ok := match(&pod.Spec.Containers[i]); ok {
				return n, nil
			}
		}
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				continue
			}
			if n, ok := match(c); ok {
				return n, nil
			}
		}
	case intstr.Int:
		if tp.IntVal == 0 {
			return svcPort.Port, nil
		}
		return tp.IntVal, nil
	}
	return 0, fmt.Errorf("no suitable port for manifest: %s", pod.UID)
}

// PodIPs returns the pod's IPs in status order (status.podIPs, or
// status.podIP when podIPs is not filled in), each in canonical form.
func PodIPs(pod *corev1.Pod) []netip.Addr {
	var raw []string
	for _, ip := range pod.Status.PodIPs {
		raw = append(raw, ip.IP)
	}
	if len(raw) == 0 && pod.Status.PodIP != "" {
		raw = []string{pod.Status.PodIP}
	}
	var out []netip.Addr
	for _, s := range raw {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}

// IsServiceIPSet reports whether the Service has a cluster IP (is not
// headless).
func IsServiceIPSet(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != ""
}

// TriggerTimeTracker computes the endpoints.kubernetes.io/last-change-trigger-time
// annotation, as upstream: for a Service seen for the first time, its
// creation time; afterwards, the earliest of the changes observed since the
// previous sync (a pod's Ready condition transition, the Service's
// creation). A zero time means nothing changed and the annotation is
// dropped. Safe for concurrent use with different keys.
type TriggerTimeTracker struct {
	mu     sync.Mutex
	states map[string]triggerState
}

type triggerState struct {
	service time.Time
	pods    map[string]time.Time
}

// NewTriggerTimeTracker returns an empty tracker.
func NewTriggerTimeTracker() *TriggerTimeTracker {
	return &TriggerTimeTracker{states: map[string]triggerState{}}
}

// Compute records the state of svc and its pods and returns the trigger
// time to publish.
func (t *TriggerTimeTracker) Compute(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	key := svc.Namespace + "/" + svc.Name
	t.mu.Lock()
	prev, known := t.states[key]
	t.mu.Unlock()

	var minChanged time.Time
	earliest := func(at time.Time) {
		if minChanged.IsZero() || at.Before(minChanged) {
			minChanged = at
		}
	}
	next := triggerState{service: svc.CreationTimestamp.Time, pods: map[string]time.Time{}}
	for _, pod := range pods {
		var at time.Time
		if c := podutil.ReadyCondition(pod); c != nil {
			at = c.LastTransitionTime.Time
		}
		if at.IsZero() {
			continue
		}
		next.pods[pod.Name] = at
		if at.After(prev.pods[pod.Name]) {
			earliest(at)
		}
	}
	if next.service.After(prev.service) {
		earliest(next.service)
	}
	t.mu.Lock()
	t.states[key] = next
	t.mu.Unlock()
	if !known {
		return svc.CreationTimestamp.Time
	}
	return minChanged
}

// Forget drops what is known about a Service.
func (t *TriggerTimeTracker) Forget(namespace, name string) {
	t.mu.Lock()
	delete(t.states, namespace+"/"+name)
	t.mu.Unlock()
}

// ServicesSelecting returns the keys of the Services in ns whose selector
// matches podLabels. A nil selector selects nothing.
func ServicesSelecting(lister corelisters.ServiceLister, ns string, podLabels map[string]string) []string {
	svcs, err := lister.Services(ns).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, svc := range svcs {
		if svc.Spec.Selector == nil {
			continue
		}
		if labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(podLabels)) {
			keys = append(keys, svc.Namespace+"/"+svc.Name)
		}
	}
	return keys
}

// PodServices maps an event on a pod (a controller.Builder Watches map
// function: old is nil but on update) to the keys of the Services whose
// selectors match it; an update that changed the pod's labels also names
// those matching its old labels, and a resync names none.
func PodServices(lister corelisters.ServiceLister) func(old, cur any) []string {
	return func(oldObj, obj any) []string {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil
		}
		if oldObj == nil {
			return ServicesSelecting(lister, pod.Namespace, pod.Labels) // added or deleted
		}
		oldPod, ok := oldObj.(*corev1.Pod)
		if !ok || oldPod.ResourceVersion == pod.ResourceVersion {
			return nil
		}
		keys := ServicesSelecting(lister, pod.Namespace, pod.Labels)
		if !labels.Equals(oldPod.Labels, pod.Labels) {
			keys = append(keys, ServicesSelecting(lister, oldPod.Namespace, oldPod.Labels)...)
		}
		return keys
	}
}
