package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "nodeipam"

// Defaults, as plainkube's --cluster-cidr and upstream's --node-cidr-mask-size.
var DefaultClusterCIDR = netip.MustParsePrefix("10.42.0.0/16")

const DefaultNodeMaskSize = 24

// ErrFull means every node-sized range of the cluster CIDR is taken.
var ErrFull = errors.New("nodeipam: the cluster CIDR has no free range left")

// Allocate returns the first range of size maskBits inside cluster that
// overlaps none of used.
func Allocate(cluster netip.Prefix, maskBits int, used []netip.Prefix) (netip.Prefix, error) {
	cluster = cluster.Masked()
	if maskBits < cluster.Bits() || maskBits > cluster.Addr().BitLen() {
		return netip.Prefix{}, fmt.Errorf("nodeipam: node mask /%d does not fit in %s", maskBits, cluster)
	}
	if !cluster.Addr().Is4() || maskBits-cluster.Bits() > 24 {
		return netip.Prefix{}, fmt.Errorf("nodeipam: only IPv4 cluster CIDRs with at most 2^24 node ranges are supported, not %s", cluster)
	}
	n := 1 << (maskBits - cluster.Bits())
	base := cluster.Addr().As4()
	start := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	step := uint32(1) << (32 - maskBits)
	for i := 0; i < n; i++ {
		v := start + uint32(i)*step
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), maskBits)
		free := true
		for _, u := range used {
			if u.Overlaps(p) {
				free = false
				break
			}
		}
		if free {
			return p, nil
		}
	}
	return netip.Prefix{}, ErrFull
}

// usedRanges lists the pod CIDRs the nodes hold.
func usedRanges(nodes []*corev1.Node) []netip.Prefix {
	var out []netip.Prefix
	for _, n := range nodes {
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			if p, err := netip.ParsePrefix(c); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	return out
}

// Controller is the node IPAM controller.
type Controller struct {
	ClusterCIDR netip.Prefix
	MaskBits    int
	Logger      *slog.Logger
	// Informers, when set, supplies the Node informer, shared with the
	// process's other components (see reconcile.SharedInformers).
	Informers *reconcile.SharedInformers
	client    kubernetes.Interface
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg, with the default ranges.
func New(cfg *rest.Config) (*Controller, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{ClusterCIDR: DefaultClusterCIDR, MaskBits: DefaultNodeMaskSize, client: cs}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

// Run allocates pod CIDRs until ctx ends. It uses one worker whatever
// workers says: allocations must not race each other.
func (c *Controller) Run(ctx context.Context, _ int) error {
	log := c.Logger
	if log == nil {
		log = slog.Default().With("controller", Name)
	}
	queue := reconcile.NewQueue[string](Name)
	factory := informers.NewSharedInformerFactory(c.client, 0)
	sharedFactory := reconcile.SharedOr(c.Informers, factory)
	nodes := sharedFactory.Core().V1().Nodes()
	enqueue := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok && n.Spec.PodCIDR == "" {
			queue.Add(n.Name)
		}
	}
	removeNodeHandler, err := reconcile.AddHandler(nodes.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return err
	}
	defer removeNodeHandler()
	lister := nodes.Lister()
	factory.Start(ctx.Done())
	sharedFactory.Start(ctx.Done())
	defer factory.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, "nodeipam: node informer", nodes.Informer().HasSynced); !ok {
		queue.ShutDown()
		return err
	}
	// Ranges handed out but maybe not yet seen by the informer.
	assigned := map[string]netip.Prefix{}
	reconcile.ProcessQueue(ctx, queue, 1, log, func(ctx context.Context, name string) (reconcile.Result, error) {
		node, err := lister.Get(name)
		if apierrors.IsNotFound(err) {
			delete(assigned, name)
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, err
		}
		if node.Spec.PodCIDR != "" {
			delete(assigned, name)
			return reconcile.Result{}, nil
		}
		all, err := lister.List(labels.Everything())
		if err != nil {
			return reconcile.Result{}, err
		}
		used := usedRanges(all)
		for other, p := range assigned {
			if other != name {
				used = append(used, p)
			}
		}
		cidr, err := Allocate(c.ClusterCIDR, c.MaskBits, used)
		if err != nil {
			return reconcile.Result{}, err
		}
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"uid": node.UID},
			"spec":     map[string]any{"podCIDR": cidr.String(), "podCIDRs": []string{cidr.String()}},
		})
		if _, err := c.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("assigning pod CIDR %s to node %s: %w", cidr, name, err)
		}
		assigned[name] = cidr
		log.Info("assigned pod CIDR", "node", name, "podCIDR", cidr.String())
		return reconcile.Result{}, nil
	})
	return nil
}
