package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/knftables"

	"plainkube.dev/plainkube/internal/netfilter"
	"plainkube.dev/plainkube/internal/reconcile"
)

// DefaultTable is the name of the nftables table (in the ip and ip6
// families) that holds all of the proxy's rules.
const DefaultTable = "plainkube"

// Options configure a Proxy.
type Options struct {
	// NodeName is the node the proxy runs on (required).
	NodeName string
	// Addresses are the node's addresses NodePorts and load-balancer
	// ports are served on (default: the Node's InternalIP and ExternalIP
	// addresses); 127.0.0.1 is added, as upstream's iptables mode does.
	Addresses []netip.Addr
	// ServiceCIDRs are the cluster's Service ranges: their families are
	// programmed, and their unallocated addresses rejected. Default:
	// 10.96.0.0/12. The ranges of the ServiceCIDR objects (of those
	// families) are rejected too, as they come and go.
	ServiceCIDRs []netip.Prefix
	// Table is the nftables table's name (default DefaultTable).
	Table string
	// ResyncPeriod is how often the whole table is rewritten, repairing
	// any drift (default 5m).
	ResyncPeriod time.Duration
	// Metrics, when set, gets the proxy's metrics.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
}

// Proxy programs Services into nftables on one node. New makes one; Run
// drives it until its context ends.
type Proxy struct {
	opts     Options
	cs       kubernetes.Interface
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	nodes    corelisters.NodeLister
	cidrs    networkinglisters.ServiceCIDRLister
	synced   []cache.InformerSynced
	log      *slog.Logger
	metrics  *metrics
	recorder record.EventRecorder
	health   *healthServers

	mu    sync.Mutex
	dirty map[string]bool // Service keys (namespace/name) to recompute
	full  bool            // rewrite the whole table next
	// triggers are the EndpointSlices' last-change times not yet
	// programmed, for the network programming latency.
	triggers []time.Time
	kick     reconcile.Kick

	tables []*familyTable
	// warned is the last warning recorded per Service, so that a warning
	// is recorded once per change, not once per sync.
	warned map[string]string
}

// familyTable is one family's table: the knftables handle and what was
// written into it.
type familyTable struct {
	fam   family
	nft   knftables.Interface
	state *tableState
	// elements writes the element-only changes of a sync (nil: all go
	// through nft).
	elements *netfilter.ElementWriter
}

// New makes a Proxy whose informers are registered on factory (the caller
// starts it); cs writes events.
func New(cs kubernetes.Interface, factory informers.SharedInformerFactory, opts Options) (*Proxy, error) {
	if opts.NodeName == "" {
		return nil, errors.New("proxy: a node name is required")
	}
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if len(opts.ServiceCIDRs) == 0 {
		opts.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = 5 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p := &Proxy{opts: opts, cs: cs, log: opts.Logger.With("component", "proxy"), dirty: map[string]bool{}, full: true,
		kick: reconcile.NewKick(), warned: map[string]string{}}
	p.metrics = newMetrics(opts.Metrics)
	p.health = newHealthServers(p.log)
	svcInf := factory.Core().V1().Services()
	sliceInf := factory.Discovery().V1().EndpointSlices()
	// The factory's informer of every Node, which the node's pod network
	// shares (a factory holds one informer per type): the proxy reads
	// only its own Node of it.
	nodeInf := factory.Core().V1().Nodes().Informer()
	cidrInf := factory.Networking().V1().ServiceCIDRs()
	p.services, p.slices, p.nodes, p.cidrs = svcInf.Lister(), sliceInf.Lister(), corelisters.NewNodeLister(nodeInf.GetIndexer()), cidrInf.Lister()
	p.synced = []cache.InformerSynced{svcInf.Informer().HasSynced, sliceInf.Informer().HasSynced, nodeInf.HasSynced, cidrInf.Informer().HasSynced}
	onService := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			p.markDirty(key, time.Time{})
		}
	}
	if _, err := svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onService, UpdateFunc: func(_, obj any) { onService(obj) }, DeleteFunc: onService,
	}); err != nil {
		return nil, err
	}
	onSlice := func(obj any) {
		s, ok := reconcile.DeletedObject[*discoveryv1.EndpointSlice](obj)
		if !ok || s.Labels[discoveryv1.LabelServiceName] == "" {
			return
		}
		var trigger time.Time
		if v, ok := s.Annotations[corev1.EndpointsLastChangeTriggerTime]; ok {
			trigger, _ = time.Parse(time.RFC3339Nano, v)
		}
		p.markDirty(s.Namespace+"/"+s.Labels[discoveryv1.LabelServiceName], trigger)
	}
	if _, err := sliceInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onSlice, UpdateFunc: func(_, obj any) { onSlice(obj) }, DeleteFunc: onSlice,
	}); err != nil {
		return nil, err
	}
	onNode := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok && n.Name == opts.NodeName {
			p.rewriteAll()
			p.poke()
		}
	}
	if _, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onNode, UpdateFunc: func(old, obj any) {
			if o, n := old.(*corev1.Node), obj.(*corev1.Node); o.Spec.PodCIDR != n.Spec.PodCIDR ||
				o.Labels[corev1.LabelTopologyZone] != n.Labels[corev1.LabelTopologyZone] {
				onNode(obj)
			}
		},
	}); err != nil {
		return nil, err
	}
	// A range added or removed changes the whole table's fence.
	rewrite := func(any) {
		p.rewriteAll()
		p.poke()
	}
	if _, err := cidrInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: rewrite, DeleteFunc: rewrite, UpdateFunc: func(old, cur any) {
			if o, c := old.(*networkingv1.ServiceCIDR), cur.(*networkingv1.ServiceCIDR); !slices.Equal(o.Spec.CIDRs, c.Spec.CIDRs) {
				rewrite(cur)
			}
		},
	}); err != nil {
		return nil, err
	}
	for _, f := range p.families() {
		nft, err := knftables.New(f.NFT, opts.Table)
		if err != nil {
			return nil, fmt.Errorf("nftables: %w", err)
		}
		p.tables = append(p.tables, &familyTable{fam: f, nft: nft, state: newTableState(f), elements: f.NewElementWriter(opts.Table)})
	}
	return p, nil
}

// families are the IP families of the service ranges.
func (p *Proxy) families() []family {
	var out []family
	for _, f := range []family{ipv4, ipv6} {
		if slices.ContainsFunc(p.opts.ServiceCIDRs, func(c netip.Prefix) bool { return c.Addr().Is6() == f.Is6 }) {
			out = append(out, f)
		}
	}
	return out
}

func (p *Proxy) markDirty(key string, trigger time.Time) {
	p.mu.Lock()
	p.dirty[key] = true
	if !trigger.IsZero() {
		p.triggers = append(p.triggers, trigger)
	}
	p.mu.Unlock()
	p.poke()
}

// rewriteAll makes the next sync write the whole table.
func (p *Proxy) rewriteAll() {
	p.mu.Lock()
	p.full = true
	p.mu.Unlock()
}

func (p *Proxy) poke() { p.kick.Poke() }

// Run programs the node until ctx ends, then leaves only the fence that
// rejects the service range (see fence).
func (p *Proxy) Run(ctx context.Context) error {
	var stopEvents func()
	p.recorder, stopEvents = reconcile.NodeEventRecorder(ctx, p.cs, "plainkube-proxy", p.opts.NodeName)
	defer stopEvents()
	if !reconcile.WaitForCacheSync(ctx, p.synced...) {
		return nil
	}
	if err := enableForwarding(); err != nil {
		p.log.Warn("setting the kernel's forwarding switches", "err", err)
	}
	defer p.health.closeAll()
	defer p.fence()
	reconcile.SyncLoop{Name: "service-proxy", Log: p.log, Sync: p.syncOnce, Period: p.opts.ResyncPeriod, MinBackoff: 100 * time.Millisecond, OnResync: p.rewriteAll,
		Failed: func(err error) {
			p.log.Warn("programming the service rules failed; rewriting the table", "err", err)
			p.rewriteAll()
		}}.Run(ctx, p.kick)
	return nil
}

// fence empties the tables of every Service's rules when the proxy
// stops, keeping the skeleton: what is addressed to the service range is
// rejected until the proxy runs again, never sent off the node (pods
// outlive their node agent). Established connections keep flowing:
// conntrack holds their translation. plainkube cleanup removes the rest.
func (p *Proxy) fence() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	node := p.node()
	for _, t := range p.tables {
		existing, err := t.nft.ListAll(ctx)
		if err != nil && !knftables.IsNotFound(err) {
			p.log.Warn("fencing the service range", "family", t.fam.NFT, "err", err)
			continue
		}
		tx := t.nft.NewTransaction()
		t.state.full(tx, node, nil, existing)
		if err := t.nft.Run(ctx, tx); err != nil {
			p.log.Warn("fencing the service range", "family", t.fam.NFT, "err", err)
		}
	}
}

// serviceCIDRs are the ranges to fence: the configured ones and every
// ServiceCIDR's (deleted ones keep addresses until they go).
func (p *Proxy) serviceCIDRs() []netip.Prefix {
	all := slices.Clone(p.opts.ServiceCIDRs)
	objs, _ := p.cidrs.List(labels.Everything())
	for _, sc := range objs {
		for _, c := range sc.Spec.CIDRs {
			if pr, err := netip.ParsePrefix(c); err == nil {
				all = append(all, pr.Masked())
			}
		}
	}
	return outermost(all)
}

// outermost drops the prefixes another one covers (and repeats): an
// interval set refuses overlapping elements.
func outermost(ps []netip.Prefix) []netip.Prefix {
	slices.SortFunc(ps, func(a, b netip.Prefix) int { return a.Bits() - b.Bits() })
	var out []netip.Prefix
	for _, p := range ps {
		if !slices.ContainsFunc(out, func(o netip.Prefix) bool { return o.Contains(p.Addr()) && o.Bits() <= p.Bits() }) {
			out = append(out, p)
		}
	}
	return out
}

// node is what the proxy knows of its node now.
func (p *Proxy) node() *Node {
	n := &Node{Name: p.opts.NodeName, Addresses: p.opts.Addresses, ServiceCIDRs: p.serviceCIDRs()}
	if obj, err := p.nodes.Get(p.opts.NodeName); err == nil {
		n.Zone = obj.Labels[corev1.LabelTopologyZone]
		if c, err := netip.ParsePrefix(obj.Spec.PodCIDR); err == nil {
			n.PodCIDR = c
		}
		if len(n.Addresses) == 0 {
			for _, a := range obj.Status.Addresses {
				if ip, err := netip.ParseAddr(a.Address); err == nil && (a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP) {
					n.Addresses = append(n.Addresses, ip)
				}
			}
		}
	}
	return n
}

// syncOnce programs what changed since the last sync: the whole table
// when asked to (start, resync, node change, a failed transaction), else
// only the dirty Services.
func (p *Proxy) syncOnce(ctx context.Context) error {
	p.mu.Lock()
	full, dirty, triggers := p.full, p.dirty, p.triggers
	p.full, p.dirty, p.triggers = false, map[string]bool{}, nil
	p.mu.Unlock()
	if !full && len(dirty) == 0 {
		return nil
	}
	start := time.Now()
	node := p.node()
	listening := hostListeners()
	var keys []string
	if full {
		all, err := p.services.List(labels.Everything())
		if err != nil {
			return err
		}
		for _, s := range all {
			keys = append(keys, s.Namespace+"/"+s.Name)
		}
		keys = append(keys, slices.Collect(maps.Keys(dirty))...) // deleted ones too
	} else {
		keys = slices.Collect(maps.Keys(dirty))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	health := map[string]*healthCheck{}
	warnings := map[string][]string{}
	var errs []error
	for _, t := range p.tables {
		rules := map[string]serviceRules{}
		for _, key := range keys {
			r := p.compute(t.fam, key, node, listening)
			rules[key] = r
			if r.healthCheck != nil {
				health[key] = r.healthCheck
			}
		}
		before := make(map[string]serviceRules, len(keys))
		for _, key := range keys {
			before[key] = t.state.applied[key]
		}
		tx := t.nft.NewTransaction()
		if full {
			existing, err := t.nft.ListAll(ctx)
			if err != nil && !knftables.IsNotFound(err) {
				errs = append(errs, err)
				continue
			}
			t.state.full(tx, node, rules, existing)
			for key, r := range t.state.applied {
				warnings[key] = append(warnings[key], r.warnings...)
			}
		} else {
			retry := map[string]bool{}
			for _, key := range keys {
				r := rules[key]
				for _, k := range t.state.update(tx, key, r) {
					retry[k] = true
				}
				warnings[key] = append(warnings[key], t.state.applied[key].warnings...)
			}
			for k := range retry {
				p.markDirty(k, time.Time{})
			}
		}
		// An empty transaction (the other family's table, mostly) is not
		// worth an nft run, which reads the table first; element changes
		// alone go over netlink.
		if tx.NumOperations() == 0 {
			continue
		}
		if err := t.elements.Run(ctx, t.nft, tx, &t.state.log); err != nil {
			if errors.Is(err, netfilter.ErrNetlink) {
				p.log.Warn("writing elements over netlink failed; nft writes them from now on", "err", err)
				t.elements = nil
			}
			// The state no longer says what is in the table.
			errs = append(errs, fmt.Errorf("%s table: %w", t.fam.NFT, err))
			continue
		}
		var stale []udpFlow
		for _, key := range keys {
			stale = append(stale, staleUDP(before[key], t.state.applied[key])...)
		}
		if err := deleteUDPFlows(stale); err != nil {
			p.log.Warn("deleting stale UDP conntrack entries", "err", err)
		}
	}
	if len(errs) > 0 {
		p.mu.Lock()
		maps.Copy(p.dirty, dirty)
		p.triggers = append(p.triggers, triggers...)
		p.mu.Unlock()
		return errors.Join(errs...)
	}
	p.health.update(keys, health, full)
	p.recordWarnings(keys, warnings)
	done := time.Now()
	p.metrics.observeSync(done.Sub(start), full, triggers, done)
	p.log.Debug("service rules programmed", "full", full, "services", len(keys), "took", done.Sub(start))
	return nil
}

// compute renders Service key for family f; a Service that is gone or
// not proxied renders to nothing.
func (p *Proxy) compute(f family, key string, node *Node, listening func(hostPort) bool) serviceRules {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	svc, err := p.services.Services(ns).Get(name)
	if err != nil {
		return serviceRules{}
	}
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})
	epSlices, _ := p.slices.EndpointSlices(ns).List(sel)
	return f.render(svc, servicePorts(svc, epSlices, node, f.Is6), node, listening)
}

// recordWarnings records a Warning event on each Service whose warnings
// changed, and forgets the Services that have none.
func (p *Proxy) recordWarnings(keys []string, warnings map[string][]string) {
	for _, key := range keys {
		msg := ""
		if w := warnings[key]; len(w) > 0 {
			slices.Sort(w)
			msg = fmt.Sprint(slices.Compact(w))
		}
		if msg == p.warned[key] {
			continue
		}
		if msg == "" {
			delete(p.warned, key)
			continue
		}
		p.warned[key] = msg
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		if svc, err := p.services.Services(ns).Get(name); err == nil && p.recorder != nil {
			p.recorder.Eventf(svc, corev1.EventTypeWarning, "FailedToProgram", "node %s: %s", p.opts.NodeName, msg[1:len(msg)-1])
		}
		p.log.Warn("service not fully programmed", "service", key, "reasons", msg)
	}
}

// enableForwarding sets the kernel switches Services need: forwarding,
// bridged traffic through netfilter (so that a pod's reply to a pod on
// the same bridge is translated back), and route_localnet for NodePorts
// on 127.0.0.1.
func enableForwarding() error {
	return netfilter.TurnOn(netfilter.IPv4Forwarding, netfilter.BridgedIPv4, netfilter.BridgedIPv6, netfilter.RouteLocalnet)
}

// RemoveTables deletes the proxy's tables named table (both families), as
// after a node that crashed; a missing table is no error.
func RemoveTables(ctx context.Context, table string) error {
	return netfilter.RemoveTables(ctx, table)
}
