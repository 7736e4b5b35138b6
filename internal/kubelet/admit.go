package kubelet

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// The node's admission of a pod, as upstream's kubelet admits a pod before
// it runs it: a pod whose host ports another pod on the node already holds
// is rejected (phase Failed, reason NodePorts), so that its controller
// makes another elsewhere instead of it never starting; so is one with a
// sysctl the node does not allow (reason SysctlForbidden, sysctls.go).
const (
	reasonNodePorts  = "NodePorts"
	messageNodePorts = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
)

// admissions remembers the agent's decision on each pod: true admitted,
// false rejected.
type admissions struct {
	mu  sync.Mutex
	set map[types.UID]bool
}

func (s *admissions) get(uid types.UID) (admitted, decided bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	admitted, decided = s.set[uid]
	return admitted, decided
}

func (s *admissions) has(uid types.UID) bool {
	admitted, _ := s.get(uid)
	return admitted
}

func (s *admissions) decide(uid types.UID, admitted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = map[types.UID]bool{}
	}
	s.set[uid] = admitted
}

// forget drops the decision on a pod that is gone.
func (s *admissions) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.set, uid)
}

// admit decides once whether pod may run here; false: it was rejected (its
// status says why; nothing of it runs), or the rejection could not be
// written yet (err). A pod the agent already started, or one that has
// finished, needs no decision.
func (a *Agent) admit(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if admitted, decided := a.admitted.get(pod.UID); decided {
		return admitted, nil
	}
	if pod.Status.StartTime != nil || terminal(pod.Status.Phase) {
		a.admitted.decide(pod.UID, true)
		return true, nil
	}
	others, err := a.pods.List(labels.Everything())
	if err != nil {
		return false, err
	}
	var held []*corev1.Pod
	for _, o := range others {
		if o.UID != pod.UID && !terminal(o.Status.Phase) && o.DeletionTimestamp == nil && (a.admitted.has(o.UID) || o.Status.StartTime != nil) {
			held = append(held, o)
		}
	}
	reason, message := "", ""
	switch {
	case hostPortsConflict(pod, held):
		reason, message = reasonNodePorts, messageNodePorts
	default:
		if m := forbiddenSysctl(pod); m != "" {
			reason, message = reasonSysctlForbidden, m
		}
	}
	if reason == "" {
		a.admitted.decide(pod.UID, true)
		return true, nil
	}
	a.log.Info("rejecting pod", "pod", pod.Namespace+"/"+pod.Name, "reason", reason)
	if a.events != nil {
		a.events.Record(pod, "", corev1.EventTypeWarning, reason, "%s", message)
	}
	upd := pod.DeepCopy()
	upd.Status.Phase, upd.Status.Reason, upd.Status.Message = corev1.PodFailed, reason, "Pod was rejected: "+message
	if _, err := a.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("rejecting pod: %w", err)
	}
	a.admitted.decide(pod.UID, false)
	return false, nil
}

// hostPortsConflict reports whether pod asks for a host port (protocol,
// port, address) one of held holds; an empty or 0.0.0.0 address holds the
// port on every address.
func hostPortsConflict(pod *corev1.Pod, held []*corev1.Pod) bool {
	type port struct {
		proto corev1.Protocol
		ip    string
		port  int32
	}
	ports := func(p *corev1.Pod) []port {
		var out []port
		for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range cs {
				for _, cp := range c.Ports {
					if cp.HostPort <= 0 {
						continue
					}
					proto := cp.Protocol
					if proto == "" {
						proto = corev1.ProtocolTCP
					}
					ip := cp.HostIP
					if ip == "" {
						ip = "0.0.0.0"
					}
					out = append(out, port{proto, ip, cp.HostPort})
				}
			}
		}
		return out
	}
	want := ports(pod)
	if len(want) == 0 {
		return false
	}
	for _, o := range held {
		for _, h := range ports(o) {
			for _, w := range want {
				if h.proto == w.proto && h.port == w.port && (h.ip == w.ip || h.ip == "0.0.0.0" || w.ip == "0.0.0.0") {
					return true
				}
			}
		}
	}
	return false
}
