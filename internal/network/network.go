package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Options configure a Network.
type Options struct {
	// NodeName is the node it runs on (required).
	NodeName string
	// NodeIP is the node's address: the VXLAN device sends from it, over
	// the link that holds it.
	NodeIP netip.Addr
	// Backend is how pod traffic crosses between nodes (default HostGW).
	Backend Backend
	// ClusterCIDRs are the cluster's pod ranges (default 10.42.0.0/16)
	// and ServiceCIDRs its Service ranges (default 10.96.0.0/12): pod
	// traffic to them keeps its source address; to anywhere else it is
	// masqueraded to the node's.
	ClusterCIDRs, ServiceCIDRs []netip.Prefix
	// Table is the nftables table of the masquerading (default
	// DefaultTable).
	Table string
	// ResyncPeriod is how often everything is checked and corrected
	// besides on every Node change (default 30s).
	ResyncPeriod time.Duration
	Logger       *slog.Logger
}

// Network keeps one node's routes to the other nodes' pod ranges, and
// its masquerading, in line with the Nodes. New makes one; Run drives it.
type Network struct {
	opts     Options
	cs       kubernetes.Interface
	nodes    corelisters.NodeLister
	synced   cache.InformerSynced
	log      *slog.Logger
	kick     reconcile.Kick
	masq     *masqueradeTables
	recorder record.EventRecorder
	// reported is the reason last said for each unreachable node.
	reported map[string]string
}

// New makes the node's Network, its Node informer registered on factory
// (every Node; the caller starts it); cs publishes the node's VXLAN
// endpoint, condition and events.
func New(cs kubernetes.Interface, factory informers.SharedInformerFactory, opts Options) (*Network, error) {
	if opts.NodeName == "" {
		return nil, errors.New("network: a node name is required")
	}
	if opts.Backend == "" {
		opts.Backend = HostGW
	}
	if _, err := ParseBackend(string(opts.Backend)); err != nil {
		return nil, err
	}
	if len(opts.ClusterCIDRs) == 0 {
		opts.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.42.0.0/16")}
	}
	if len(opts.ServiceCIDRs) == 0 {
		opts.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}
	}
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	masq, err := newMasqueradeTables(opts.Table)
	if err != nil {
		return nil, err
	}
	n := &Network{opts: opts, cs: cs, log: opts.Logger.With("component", "pod-network", "backend", string(opts.Backend)),
		kick: reconcile.NewKick(), masq: masq, reported: map[string]string{}}
	inf := factory.Core().V1().Nodes()
	n.nodes, n.synced = inf.Lister(), inf.Informer().HasSynced
	_, err = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { n.poke() },
		DeleteFunc: func(any) { n.poke() },
		UpdateFunc: func(old, cur any) {
			if o, c := old.(*corev1.Node), cur.(*corev1.Node); routingChanged(o, c) {
				n.poke()
			}
		},
	})
	return n, err
}

// routingChanged reports whether a Node changed in what the routes
// depend on (not its heartbeats).
func routingChanged(o, c *corev1.Node) bool {
	return o.Spec.PodCIDR != c.Spec.PodCIDR || !slices.Equal(o.Spec.PodCIDRs, c.Spec.PodCIDRs) ||
		!slices.Equal(o.Status.Addresses, c.Status.Addresses) ||
		o.Annotations[AnnotationVXLANMAC] != c.Annotations[AnnotationVXLANMAC] ||
		o.Annotations[AnnotationVXLANIP] != c.Annotations[AnnotationVXLANIP]
}

func (n *Network) poke() { n.kick.Poke() }

// Run keeps the node's routes until ctx ends. It acts on the network
// namespace of the thread it runs on: a caller running it for another
// namespace locks its goroutine to a thread in that one. When it stops,
// the routes and tables stay (the pods outlive the node agent); plainkube
// cleanup (Cleanup) removes them.
func (n *Network) Run(ctx context.Context) error {
	var stopEvents func()
	n.recorder, stopEvents = reconcile.NodeEventRecorder(ctx, n.cs, "plainkube-pod-network", n.opts.NodeName)
	defer stopEvents()
	if !reconcile.WaitForCacheSync(ctx, n.synced) {
		return nil
	}
	reconcile.SyncLoop{Name: "pod-network", Log: n.log, Sync: n.sync, Period: n.opts.ResyncPeriod, MinBackoff: 200 * time.Millisecond,
		Failed: func(err error) {
			if ctx.Err() == nil {
				n.log.Warn("programming the pod network", "err", err)
			}
		}}.Run(ctx, n.kick)
	return nil
}

// sync brings the host in line with the Nodes once.
func (n *Network) sync(ctx context.Context) error {
	self, err := n.nodes.Get(n.opts.NodeName)
	if apierrors.IsNotFound(err) {
		return nil // not registered yet: its creation pokes
	}
	if err != nil {
		return err
	}
	own := podCIDRs(self)
	if len(own) == 0 {
		n.log.Debug("waiting for the node's pod range")
		return nil
	}
	if err := enableForwarding(own); err != nil {
		n.log.Warn("turning on IP forwarding", "err", err)
	}
	host, err := readHost(n.opts.NodeIP)
	if err != nil {
		return err
	}
	dev := 0
	if n.opts.Backend == VXLAN {
		if dev, err = n.syncVXLAN(ctx, self, own, host); err != nil {
			return err
		}
	} else if removed, err := removeVXLAN(); err != nil {
		return fmt.Errorf("removing %s: %w", VXLANDevice, err)
	} else if removed {
		n.log.Info("removed the VXLAN device (backend host-gw)", "device", VXLANDevice)
	}
	nodes, err := n.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	plan := Desired(Host{NodeName: n.opts.NodeName, Backend: n.opts.Backend, Connected: host.connected, Local: host.local}, nodes)
	errs := []error{applyRoutes(plan.Routes, dev)}
	if dev != 0 {
		errs = append(errs, applyNeighbors(plan.Neighbors, dev), applyFDB(plan.FDB, dev))
	}
	errs = append(errs, n.masq.apply(ctx, n.opts.ClusterCIDRs, n.opts.ServiceCIDRs))
	n.report(plan)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return n.setCondition(ctx, self, plan)
}

// syncVXLAN sets up the VXLAN device and publishes its endpoint on the
// node's Node; it returns the device's index.
func (n *Network) syncVXLAN(ctx context.Context, self *corev1.Node, own []netip.Prefix, host hostLinks) (int, error) {
	if host.nodeLink == nil {
		return 0, fmt.Errorf("the vxlan backend needs the node's address %v on a link of this host", n.opts.NodeIP)
	}
	vtep := VTEPAddress(own)
	if !vtep.IsValid() {
		return 0, fmt.Errorf("the vxlan backend carries IPv4 pod ranges only; the node has %v", own)
	}
	link, err := ensureVXLAN(n.opts.NodeName, host.nodeLink, n.opts.NodeIP, vtep)
	if err != nil {
		return 0, err
	}
	want := map[string]string{AnnotationVXLANMAC: link.Attrs().HardwareAddr.String(), AnnotationVXLANIP: vtep.String()}
	if self.Annotations[AnnotationVXLANMAC] != want[AnnotationVXLANMAC] || self.Annotations[AnnotationVXLANIP] != want[AnnotationVXLANIP] {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": want}})
		if _, err := n.cs.CoreV1().Nodes().Patch(ctx, n.opts.NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return 0, fmt.Errorf("publishing the node's VXLAN endpoint: %w", err)
		}
		n.log.Info("published the node's VXLAN endpoint", "mac", want[AnnotationVXLANMAC], "ip", want[AnnotationVXLANIP])
	}
	return link.Attrs().Index, nil
}

// report says, once per change, which nodes the plan has no route to:
// in the log and as a Warning event on this node (a node yet to publish
// its endpoint only in the log: it is starting).
func (n *Network) report(plan Plan) {
	now := map[string]string{}
	for _, u := range plan.Unreachable {
		now[u.Node] = u.Reason
		if n.reported[u.Node] == u.Reason {
			continue
		}
		if u.Pending {
			n.log.Info("no route to a node's pods yet", "node", u.Node, "reason", u.Reason)
			continue
		}
		n.log.Warn("no route to a node's pods", "node", u.Node, "reason", u.Reason)
		n.recorder.Eventf(n.nodeRef(), corev1.EventTypeWarning, "NoPodRoute", "no route to node %s's pods: %s", u.Node, u.Reason)
	}
	for node := range n.reported {
		if _, ok := now[node]; !ok {
			n.log.Info("routes to a node's pods", "node", node)
		}
	}
	n.reported = now
}

func (n *Network) nodeRef() *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: n.opts.NodeName, UID: types.UID(n.opts.NodeName)}
}

// Condition reasons of the node's NetworkUnavailable condition, which the
// network owns (the node agent leaves it alone, as upstream's kubelet).
const (
	ReasonRoutesCreated = "RouteCreated"
	ReasonRoutesMissing = "NoRouteToSomeNodes"
)

// condition is the NetworkUnavailable condition the plan gives: False
// (the node's pods can reach out), with the nodes it has no route to in
// its reason and message.
func condition(backend Backend, plan Plan) corev1.NodeCondition {
	c := corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: ReasonRoutesCreated,
		Message: fmt.Sprintf("plainkube %s: routes to %d nodes' pod ranges", backend, len(plan.Routes))}
	if len(plan.Unreachable) > 0 {
		var names []string
		for _, u := range plan.Unreachable {
			names = append(names, u.Node+" ("+u.Reason+")")
		}
		c.Reason = ReasonRoutesMissing
		c.Message = fmt.Sprintf("plainkube %s: no route to the pods of %s", backend, strings.Join(names, ", "))
	}
	return c
}

// setCondition writes the node's NetworkUnavailable condition when it
// differs (a strategic merge by type: the node agent's conditions stay).
func (n *Network) setCondition(ctx context.Context, self *corev1.Node, plan Plan) error {
	want := condition(n.opts.Backend, plan)
	for _, c := range self.Status.Conditions {
		if c.Type == want.Type && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
			return nil
		}
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	want.LastHeartbeatTime, want.LastTransitionTime = now, now
	for _, c := range self.Status.Conditions {
		if c.Type == want.Type && c.Status == want.Status && !c.LastTransitionTime.IsZero() {
			want.LastTransitionTime = c.LastTransitionTime
		}
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{want}}})
	_, err := n.cs.CoreV1().Nodes().Patch(ctx, n.opts.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// Cleanup removes what the pod network put on the host: the tables of
// masquerading (named table), its routes and the VXLAN device. It says
// what it removed through report.
func Cleanup(ctx context.Context, table string, report func(string)) error {
	if table == "" {
		table = DefaultTable
	}
	var errs []error
	masq, err := newMasqueradeTables(table)
	if err == nil {
		err = masq.remove(ctx)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("nftables: %w", err))
	} else {
		report("removed the nftables tables ip/ip6 " + table)
	}
	if removed, err := removeVXLAN(); err != nil {
		errs = append(errs, fmt.Errorf("deleting %s: %w", VXLANDevice, err))
	} else if removed {
		report("deleted the VXLAN device " + VXLANDevice)
	}
	if count, err := removeRoutes(); err != nil {
		errs = append(errs, fmt.Errorf("deleting the pod network's routes: %w", err))
	} else if count > 0 {
		report(fmt.Sprintf("deleted %d routes to other nodes' pod ranges (proto %d)", count, RouteProtocol))
	}
	return errors.Join(errs...)
}
