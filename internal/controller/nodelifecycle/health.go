package nodelifecycle

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// health is what the controller remembers about a node between looks, as
// upstream's nodeHealthData: when it last saw a sign of life (probe, by its
// own clock, so that clock skew with the kubelet does not matter), the
// Ready condition and lease renew time it saw then, and the Ready status
// of its previous look (to notice transitions).
type health struct {
	probe           time.Time
	readyTransition time.Time
	ready           *corev1.NodeCondition
	leaseRenew      *time.Time
	lastReady       corev1.ConditionStatus
}

func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	return getCondition(node.Status.Conditions, corev1.NodeReady)
}

func getCondition(conds []corev1.NodeCondition, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// readyStatus is the node's Ready status; "" if it has none.
func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	if c := readyCondition(node); c != nil {
		return c.Status
	}
	return ""
}

// observe folds a look at the node and its Lease into what was known
// (prev, nil at first), as upstream's tryUpdateNodeHealth: a new Ready
// heartbeat or a renewed lease is a sign of life, dated now. A node first
// seen with a Ready condition gets a full grace period from now; one that
// never posted status counts from its creation.
func observe(prev *health, node *corev1.Node, lease *coordinationv1.Lease, now time.Time) *health {
	cur := readyCondition(node)
	var h health
	switch {
	case prev == nil && cur == nil:
		h = health{probe: node.CreationTimestamp.Time, readyTransition: node.CreationTimestamp.Time}
	case prev == nil, (prev.ready == nil) != (cur == nil):
		h = health{probe: now, readyTransition: now}
	case cur != nil && !prev.ready.LastHeartbeatTime.Equal(&cur.LastHeartbeatTime):
		h = health{probe: now, readyTransition: prev.readyTransition}
		if !prev.ready.LastTransitionTime.Equal(&cur.LastTransitionTime) {
			h.readyTransition = now
		}
	default:
		h = *prev
	}
	if prev != nil {
		h.leaseRenew = prev.leaseRenew
		h.lastReady = prev.lastReady
	}
	if cur != nil {
		c := *cur
		h.ready = &c
	} else {
		h.ready = nil
	}
	if lease != nil && lease.Spec.RenewTime != nil {
		renew := lease.Spec.RenewTime.Time
		if h.leaseRenew == nil || h.leaseRenew.Before(renew) {
			h.leaseRenew = &renew
			h.probe = now
		}
	}
	return &h
}

// Reasons and messages of the conditions the controller writes, as
// upstream.
const (
	reasonStatusUnknown      = "NodeStatusUnknown"
	messageStatusUnknown     = "Kubelet stopped posting node status."
	reasonStatusNeverUpdated = "NodeStatusNeverUpdated"
	messageNeverUpdated      = "Kubelet never posted node status."
)

// unknownConditionTypes are set to Unknown when a node goes silent.
// NetworkUnavailable is managed by the network, not the kubelet.
var unknownConditionTypes = []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

// markUnknown sets the kubelet's conditions of a node that stopped
// reporting to Unknown (adding those it never posted) and reports whether
// anything changed.
func markUnknown(node *corev1.Node, now time.Time) bool {
	changed := false
	at := metav1.NewTime(now)
	for _, t := range unknownConditionTypes {
		c := getCondition(node.Status.Conditions, t)
		if c == nil {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
				Type: t, Status: corev1.ConditionUnknown, Reason: reasonStatusNeverUpdated, Message: messageNeverUpdated,
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: at,
			})
			changed = true
			continue
		}
		if c.Status != corev1.ConditionUnknown {
			c.Status = corev1.ConditionUnknown
			c.Reason = reasonStatusUnknown
			c.Message = messageStatusUnknown
			c.LastTransitionTime = at
			changed = true
		}
	}
	return changed
}
