package nodeipam

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "nodeipam"

// Component is the controller's name as upstream's.
const Component = "node-ipam-controller"

// Defaults, as plainkube's --cluster-cidr and upstream's --node-cidr-mask-size.
var DefaultClusterCIDR = netip.MustParsePrefix("10.42.0.0/16")

const DefaultNodeMaskSize = 24

// Controller is the node IPAM controller.
type Controller struct {
	controller.Base
	ClusterCIDR netip.Prefix
	MaskBits    int
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg, with the default ranges.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{ClusterCIDR: DefaultClusterCIDR, MaskBits: DefaultNodeMaskSize, Base: base}, nil
}

// Run allocates pod CIDRs until ctx ends. It uses one worker whatever
// workers says: allocations must not race each other.
func (c *Controller) Run(ctx context.Context, _ int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	nodes := b.SharedInformers().Core().V1().Nodes()
	l := &loop{c: c, nodes: nodes.Lister(), log: b.Logger(), assigned: map[string]netip.Prefix{}}
	b.Watches(nodes.Informer(), controller.Added|controller.Updated, func(_, cur any) []string {
		if n, ok := cur.(*corev1.Node); ok && n.Spec.PodCIDR == "" {
			return []string{n.Name}
		}
		return nil
	})
	return b.Run(ctx, 1, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return controller.Shape[State, Plan]{Observe: l.observe, Plan: plan, Apply: l.apply, Log: l.log}.Reconcile
	})
}

// loop is one run of the controller.
type loop struct {
	c     *Controller
	nodes corelisters.NodeLister
	log   *slog.Logger
	// assigned are ranges handed out but maybe not yet seen by the
	// informer (one worker: no lock).
	assigned map[string]netip.Prefix
}

func (l *loop) observe(name string) (State, bool, error) {
	node, err := l.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		delete(l.assigned, name)
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	all, err := l.nodes.List(labels.Everything())
	if err != nil {
		return State{}, false, err
	}
	st := State{Node: node, Nodes: all, ClusterCIDR: l.c.ClusterCIDR, MaskBits: l.c.MaskBits}
	for other, p := range l.assigned {
		if other != name {
			st.Assigned = append(st.Assigned, p)
		}
	}
	return st, true, nil
}

func (l *loop) apply(ctx context.Context, st State, p Plan) (reconcile.Result, error) {
	name := st.Node.Name
	if p.Err != nil {
		return reconcile.Result{}, p.Err
	}
	if !p.CIDR.IsValid() {
		delete(l.assigned, name)
		return reconcile.Result{}, nil
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": st.Node.UID},
		"spec":     map[string]any{"podCIDR": p.CIDR.String(), "podCIDRs": []string{p.CIDR.String()}},
	})
	if _, err := l.c.Client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("assigning pod CIDR %s to node %s: %w", p.CIDR, name, err)
	}
	l.assigned[name] = p.CIDR
	l.log.Info("assigned pod CIDR", "node", name, "podCIDR", p.CIDR.String())
	return reconcile.Result{}, nil
}
