package netpol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/knftables"

	"plainkube.dev/plainkube/internal/netfilter"
	"plainkube.dev/plainkube/internal/reconcile"
)

// DefaultTable names the nftables table (ip and ip6 families) of the
// node's policy rules.
const DefaultTable = "plainkube-netpol"

// Options configure a Netpol.
type Options struct {
	// NodeName is the node whose pods are enforced (required).
	NodeName string
	// Table is the nftables table's name (default DefaultTable).
	Table string
	// ResyncPeriod is how often the whole table is rewritten, repairing
	// any drift (default 5m).
	ResyncPeriod time.Duration
	Logger       *slog.Logger
}

// Netpol enforces NetworkPolicies on one node. New makes one; Run drives
// it until its context ends.
type Netpol struct {
	opts       Options
	policies   networkinglisters.NetworkPolicyLister
	pods       corelisters.PodLister
	namespaces corelisters.NamespaceLister
	synced     []cache.InformerSynced
	log        *slog.Logger
	tables     []*familyTable

	mu    sync.Mutex
	dirty map[string]bool // policy keys to recompute
	full  bool
	// spanning are the policies whose peers may be in any namespace
	// (namespaceSelector peers; egress named ports to any pod or an
	// ipBlock): a pod or namespace anywhere may change them.
	spanning map[string]peerNamespaces
	kick     reconcile.Kick
	// afterSync, when set (by tests), hears of each successful sync: the
	// policies it programmed.
	afterSync func(keys []string)
}

type familyTable struct {
	fam   family
	nft   knftables.Interface
	state *tableState
	// elements writes the transactions of element changes only (nil:
	// all go through nft).
	elements *netfilter.ElementWriter
}

// New makes a Netpol whose informers are registered on factory (the
// caller starts it).
func New(factory informers.SharedInformerFactory, opts Options) (*Netpol, error) {
	if opts.NodeName == "" {
		return nil, errors.New("netpol: a node name is required")
	}
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = 5 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	n := &Netpol{opts: opts, log: opts.Logger.With("component", "netpol"), dirty: map[string]bool{}, full: true,
		spanning: map[string]peerNamespaces{}, kick: reconcile.NewKick()}
	polInf := factory.Networking().V1().NetworkPolicies()
	podInf := factory.Core().V1().Pods()
	nsInf := factory.Core().V1().Namespaces()
	n.policies, n.pods, n.namespaces = polInf.Lister(), podInf.Lister(), nsInf.Lister()
	n.synced = []cache.InformerSynced{polInf.Informer().HasSynced, podInf.Informer().HasSynced, nsInf.Informer().HasSynced}
	onPolicy := func(obj any) {
		np := obj.(*networkingv1.NetworkPolicy)
		key := np.Namespace + "/" + np.Name
		n.mu.Lock()
		if peers, ok := spanningPeers(np); ok {
			n.spanning[key] = peers
		} else {
			delete(n.spanning, key)
		}
		n.dirty[key] = true
		n.mu.Unlock()
		n.poke()
	}
	if _, err := polInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onPolicy, UpdateFunc: func(_, obj any) { onPolicy(obj) },
		DeleteFunc: func(obj any) {
			if np, ok := reconcile.DeletedObject[*networkingv1.NetworkPolicy](obj); ok {
				n.mu.Lock()
				delete(n.spanning, np.Namespace+"/"+np.Name)
				n.dirty[np.Namespace+"/"+np.Name] = true
				n.mu.Unlock()
				n.poke()
			}
		},
	}); err != nil {
		return nil, err
	}
	onPod := func(obj any) {
		if p, ok := reconcile.DeletedObject[*corev1.Pod](obj); ok {
			n.markNamespace(p.Namespace)
		}
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onPod, DeleteFunc: onPod,
		UpdateFunc: func(old, cur any) {
			if o, c := old.(*corev1.Pod), cur.(*corev1.Pod); policyRelevant(o) != policyRelevant(c) ||
				!equality.Semantic.DeepEqual(o.Labels, c.Labels) || !slices.Equal(o.Status.PodIPs, c.Status.PodIPs) ||
				!equality.Semantic.DeepEqual(containerPorts(o), containerPorts(c)) {
				onPod(cur)
			}
		},
	}); err != nil {
		return nil, err
	}
	onNamespace := func(any) { n.markNamespace("") }
	if _, err := nsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onNamespace, DeleteFunc: onNamespace,
		UpdateFunc: func(old, cur any) {
			if !equality.Semantic.DeepEqual(old.(*corev1.Namespace).Labels, cur.(*corev1.Namespace).Labels) {
				onNamespace(cur)
			}
		},
	}); err != nil {
		return nil, err
	}
	for _, f := range families {
		nft, err := knftables.New(f.NFT, opts.Table)
		if err != nil {
			return nil, fmt.Errorf("nftables: %w", err)
		}
		n.tables = append(n.tables, &familyTable{fam: f, nft: nft, state: newTableState(f), elements: f.NewElementWriter(opts.Table)})
	}
	return n, nil
}

// podFacts are what policies depend on of a pod, besides its labels,
// addresses and ports.
type podFacts struct {
	node        string
	hostNetwork bool
	finished    bool
}

func policyRelevant(p *corev1.Pod) podFacts {
	return podFacts{p.Spec.NodeName, p.Spec.HostNetwork, p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed}
}

func containerPorts(p *corev1.Pod) [][]corev1.ContainerPort {
	var out [][]corev1.ContainerPort
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			out = append(out, c.Ports)
		}
	}
	return out
}

// peerNamespaces is what a spanning policy's peers say of namespaces,
// worked out once per change of the policy (a pod event asks every
// spanning policy): its peers' namespace selectors, and whether an
// egress named port reaches pods anywhere.
type peerNamespaces struct {
	selectors []labels.Selector // nil for one that does not parse: it may match anything
	anywhere  bool
}

// spanningPeers says whether np's peers may be pods of any namespace —
// it has a namespaceSelector, or an egress named port to no peer in
// particular or to an ipBlock (resolved on the pods there) — and which.
func spanningPeers(np *networkingv1.NetworkPolicy) (peerNamespaces, bool) {
	var p peerNamespaces
	spans := false
	add := func(peers []networkingv1.NetworkPolicyPeer) {
		for _, peer := range peers {
			if peer.NamespaceSelector == nil {
				continue
			}
			spans = true
			sel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
			if err != nil {
				sel = nil
			}
			p.selectors = append(p.selectors, sel)
		}
	}
	for _, r := range np.Spec.Ingress {
		add(r.From)
	}
	for _, r := range np.Spec.Egress {
		add(r.To)
		if namedPortToAny(r) {
			spans, p.anywhere = true, true
		}
	}
	return p, spans
}

// mayHavePeersIn reports whether a pod of a namespace labelled nsLabels
// may be one of the policy's peers.
func (p peerNamespaces) mayHavePeersIn(nsLabels labels.Set) bool {
	return p.anywhere || slices.ContainsFunc(p.selectors, func(sel labels.Selector) bool { return sel == nil || sel.Matches(nsLabels) })
}

// namedPortToAny reports whether egress rule r has a named port and no
// peer that limits it to pods of selected namespaces: its tuples are of
// pods anywhere (no peers, or an ipBlock).
func namedPortToAny(r networkingv1.NetworkPolicyEgressRule) bool {
	named := slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.Type == intstr.String })
	return named && (len(r.To) == 0 || slices.ContainsFunc(r.To, func(p networkingv1.NetworkPolicyPeer) bool { return p.IPBlock != nil }))
}

// markNamespace marks dirty the policies a pod of namespace ns may
// change: ns's own, and the spanning ones whose peers may be in ns ("":
// every spanning one, as when a namespace's labels change).
func (n *Netpol) markNamespace(ns string) {
	var keys []string
	var nsLabels labels.Set
	if ns != "" {
		nps, _ := n.policies.NetworkPolicies(ns).List(labels.Everything())
		for _, np := range nps {
			keys = append(keys, np.Namespace+"/"+np.Name)
		}
		if obj, err := n.namespaces.Get(ns); err == nil {
			nsLabels = obj.Labels
		}
	}
	n.mu.Lock()
	for key, peers := range n.spanning {
		if ns == "" || peers.mayHavePeersIn(nsLabels) {
			keys = append(keys, key)
		}
	}
	n.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	n.mu.Lock()
	for _, k := range keys {
		n.dirty[k] = true
	}
	n.mu.Unlock()
	n.poke()
}

func (n *Netpol) poke() { n.kick.Poke() }

// Run enforces policies on the node until ctx ends. nft and conntrack are
// called from the calling goroutine (so a test may run it in a network
// namespace of its own, its OS thread locked there). The table stays when
// it returns.
func (n *Netpol) Run(ctx context.Context) error {
	if !reconcile.WaitForCacheSync(ctx, n.synced...) {
		return nil
	}
	if err := filterBridged(); err != nil {
		n.log.Warn("bridged pod traffic may not reach the policy rules (br_netfilter)", "err", err)
	}
	reconcile.SyncLoop{Name: "network-policy", Log: n.log, Sync: n.syncOnce, Period: n.opts.ResyncPeriod, MinBackoff: 100 * time.Millisecond, OnResync: n.rewriteAll,
		Failed: func(err error) {
			n.log.Warn("programming the network policy rules failed; rewriting the table", "err", err)
			n.rewriteAll()
		}}.Run(ctx, n.kick)
	return nil
}

func (n *Netpol) rewriteAll() {
	n.mu.Lock()
	n.full = true
	n.mu.Unlock()
}

// state is what the core reads, from the informers' caches.
func (n *Netpol) state() (*State, error) {
	s := &State{NodeName: n.opts.NodeName, Namespaces: map[string]map[string]string{}, Pods: map[string][]*corev1.Pod{}}
	nss, err := n.namespaces.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, ns := range nss {
		s.Namespaces[ns.Name] = ns.Labels
	}
	pods, err := n.pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		s.Pods[p.Namespace] = append(s.Pods[p.Namespace], p)
	}
	return s, nil
}

// syncOnce programs what changed since the last sync: the whole table
// when asked to, else the dirty policies; then deletes the conntrack
// entries of connections the change forbids.
func (n *Netpol) syncOnce(ctx context.Context) error {
	n.mu.Lock()
	full, dirty := n.full, n.dirty
	n.full, n.dirty = false, map[string]bool{}
	n.mu.Unlock()
	if !full && len(dirty) == 0 {
		return nil
	}
	start := time.Now()
	fail := func(err error) error {
		n.mu.Lock()
		maps.Copy(n.dirty, dirty)
		n.mu.Unlock()
		return err
	}
	s, err := n.state()
	if err != nil {
		return fail(err)
	}
	keys := slices.Collect(maps.Keys(dirty))
	if full {
		all, err := n.policies.List(labels.Everything())
		if err != nil {
			return fail(err)
		}
		for _, np := range all {
			keys = append(keys, np.Namespace+"/"+np.Name)
		}
	}
	var errs []error
	var local func(netip.Addr) bool
	ops := 0
	for _, t := range n.tables {
		updates := map[string]*compiled{}
		for _, key := range keys {
			ns, name, _ := cache.SplitMetaNamespaceKey(key)
			if np, err := n.policies.NetworkPolicies(ns).Get(name); err == nil {
				updates[key] = compile(np, s, t.fam)
			} else {
				updates[key] = nil
			}
		}
		tx := t.nft.NewTransaction()
		narrowed := true
		if full {
			t.state.full(tx, updates)
		} else {
			narrowed = t.state.apply(tx, updates)
		}
		if tx.NumOperations() == 0 {
			continue
		}
		ops += tx.NumOperations()
		if err := t.elements.Run(ctx, t.nft, tx, &t.state.log); err != nil {
			if errors.Is(err, netfilter.ErrNetlink) {
				n.log.Warn("writing elements over netlink failed; nft writes them from now on", "family", t.fam.NFT, "err", err)
				t.elements = nil
			}
			errs = append(errs, fmt.Errorf("%s table: %w", t.fam.NFT, err))
			continue
		}
		if !narrowed {
			continue
		}
		if local == nil {
			local = localAddrs()
		}
		if deleted, err := deleteForbidden(t.fam, t.state.judge(), local); err != nil {
			n.log.Warn("deleting the conntrack entries of forbidden connections", "family", t.fam.NFT, "err", err)
		} else if deleted > 0 {
			n.log.Debug("cut connections a policy forbids", "family", t.fam.NFT, "entries", deleted)
		}
	}
	if len(errs) > 0 {
		return fail(errors.Join(errs...))
	}
	n.log.Debug("network policy rules programmed", "full", full, "policies", len(keys), "operations", ops, "took", time.Since(start))
	if n.afterSync != nil {
		n.afterSync(keys)
	}
	return nil
}

// filterBridged makes the kernel pass bridged IP traffic (pods on one
// node's bridge) through the ip and ip6 hooks, loading br_netfilter if
// need be.
func filterBridged() error {
	if _, err := os.Stat(netfilter.BridgedIPv4); err != nil {
		if out, err := exec.Command("modprobe", "br_netfilter").CombinedOutput(); err != nil {
			return fmt.Errorf("modprobe br_netfilter: %v: %s", err, out)
		}
	}
	return netfilter.TurnOn(netfilter.BridgedIPv4, netfilter.BridgedIPv6)
}

// RemoveTables deletes the tables named table (both families), as after
// a node that crashed or stopped enforcing; a missing table is no error.
func RemoveTables(ctx context.Context, table string) error {
	return netfilter.RemoveTables(ctx, table)
}
