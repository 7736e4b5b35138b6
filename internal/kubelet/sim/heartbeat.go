package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"plainkube.dev/plainkube/internal/kubelet/nodestatus"
	"plainkube.dev/plainkube/internal/reconcile"
)

// register creates node n, or brings an existing Node object up to date,
// creates or renews its Lease, and marks it registered.
func (s *Sim) register(ctx context.Context, n *simNode) error {
	now := s.opts.Clock.Now()
	want := s.opts.node(n.index, now)
	node, err := s.cs.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = s.adopt(ctx, want, now)
	}
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	s.setNode(n, node)
	n.deleted.Store(false)
	if node.Annotations[AnnotationStopped] == "true" {
		n.stopped.Store(true)
	} else if err := s.renewLease(ctx, n); err != nil {
		return err
	}
	n.lastStatus = now
	n.registered.Store(true)
	s.queueNodePods(n.name)
	return nil
}

// adopt updates an existing Node to what want registers: our labels and
// annotations added, the pod CIDR and provider ID set if unset, and — unless
// the node is stopped — the status a starting kubelet reports.
func (s *Sim) adopt(ctx context.Context, want *corev1.Node, now time.Time) (*corev1.Node, error) {
	nodes := s.cs.CoreV1().Nodes()
	var node *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		upd := cur.DeepCopy()
		if upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		maps.Copy(upd.Labels, want.Labels)
		if upd.Annotations == nil {
			upd.Annotations = map[string]string{}
		}
		maps.Copy(upd.Annotations, want.Annotations)
		if upd.Spec.PodCIDR == "" && len(upd.Spec.PodCIDRs) == 0 {
			upd.Spec.PodCIDR, upd.Spec.PodCIDRs = want.Spec.PodCIDR, want.Spec.PodCIDRs
		}
		if upd.Spec.ProviderID == "" {
			upd.Spec.ProviderID = want.Spec.ProviderID
		}
		if apiequality.Semantic.DeepEqual(cur, upd) {
			node = cur
			return nil
		}
		node, err = nodes.Update(ctx, upd, metav1.UpdateOptions{})
		return err
	})
	if err != nil || node.Annotations[AnnotationStopped] == "true" {
		return node, err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		upd := node.DeepCopy()
		upd.Status.Capacity = want.Status.Capacity
		upd.Status.Allocatable = want.Status.Allocatable
		upd.Status.Addresses = want.Status.Addresses
		upd.Status.DaemonEndpoints = want.Status.DaemonEndpoints
		upd.Status.NodeInfo = want.Status.NodeInfo
		upd.Status.Conditions = mergeNodeConditions(node.Status.Conditions, nodestatus.HealthyConditions(node.Status.Conditions, now))
		updated, err := nodes.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, gerr := nodes.Get(ctx, want.Name, metav1.GetOptions{}); gerr == nil {
				node = fresh
			}
			return err
		}
		if err == nil {
			node = updated
		}
		return err
	})
	return node, err
}

// mergeNodeConditions is have with ours replacing those of the same type.
func mergeNodeConditions(have, ours []corev1.NodeCondition) []corev1.NodeCondition {
	out := append([]corev1.NodeCondition(nil), ours...)
	for _, h := range have {
		mine := false
		for _, o := range ours {
			mine = mine || o.Type == h.Type
		}
		if !mine {
			out = append(out, h)
		}
	}
	return out
}

// heartbeat is one node's turn: renew its Lease, refresh its status when it
// is due, and come back after HeartbeatInterval. A stopped or deleted node
// is dropped from the queue (nodeChanged puts a resumed one back).
func (s *Sim) heartbeat(ctx context.Context, name string) (reconcile.Result, error) {
	n := s.byName[name]
	if n == nil || n.deleted.Load() || n.stopped.Load() {
		return reconcile.Result{}, nil
	}
	if !n.registered.Load() {
		if err := s.register(ctx, n); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: s.opts.HeartbeatInterval}, nil
	}
	if err := s.renewLease(ctx, n); err != nil {
		return reconcile.Result{}, err
	}
	now := s.opts.Clock.Now()
	// Refresh the status if waiting for the next heartbeat would leave it
	// older than StatusInterval.
	if n.forceStatus.Load() || !now.Add(s.opts.HeartbeatInterval).Before(n.lastStatus.Add(s.opts.StatusInterval)) {
		if err := s.updateNodeStatus(ctx, n, now); err != nil {
			return reconcile.Result{}, err
		}
		n.forceStatus.Store(false)
		n.lastStatus = now
	}
	return reconcile.Result{RequeueAfter: s.opts.HeartbeatInterval}, nil
}

// renewLease renews node n's Lease (creating it if need be).
func (s *Sim) renewLease(ctx context.Context, n *simNode) error {
	leases := s.cs.CoordinationV1().Leases(LeaseNamespace)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, UID: n.getUID()}}
	for attempt := 0; ; attempt++ {
		now := s.opts.Clock.Now()
		want := lease(node, s.opts.HeartbeatInterval, now)
		n.mu.Lock()
		cur := n.lease
		n.mu.Unlock()
		var (
			got *coordinationv1.Lease
			err error
		)
		if cur == nil {
			got, err = leases.Get(ctx, n.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				got, err = leases.Create(ctx, want, metav1.CreateOptions{})
			} else if err == nil {
				cur = got
			}
		}
		if cur != nil {
			upd := cur.DeepCopy()
			upd.Spec = want.Spec
			upd.OwnerReferences = want.OwnerReferences
			got, err = leases.Update(ctx, upd, metav1.UpdateOptions{})
		}
		if err == nil {
			n.mu.Lock()
			n.lease = got
			n.mu.Unlock()
			return nil
		}
		n.mu.Lock()
		n.lease = nil
		n.mu.Unlock()
		if attempt >= 2 || !(apierrors.IsConflict(err) || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err)) {
			return fmt.Errorf("lease %s: %w", n.name, err)
		}
	}
}

// updateNodeStatus patches node n's conditions (a strategic merge by
// type, so conditions others own stay), heartbeat time now.
func (s *Sim) updateNodeStatus(ctx context.Context, n *simNode, now time.Time) error {
	var have []corev1.NodeCondition
	if cur, err := s.nodeLister.Get(n.name); err == nil {
		have = cur.Status.Conditions
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": nodestatus.HealthyConditions(have, now)}})
	if err != nil {
		return err
	}
	_, err = s.cs.CoreV1().Nodes().Patch(ctx, n.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		n.deleted.Store(true)
		s.log.Info("simulated node deleted; no longer driving it", "node", n.name)
		return nil
	}
	return err
}
