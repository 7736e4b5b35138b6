package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/dns"
	"plainkube.dev/plainkube/internal/kubelet"
	"plainkube.dev/plainkube/internal/netpol"
	"plainkube.dev/plainkube/internal/network"
	"plainkube.dev/plainkube/internal/proxy"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Options configure a node.
type Options struct {
	// Agent configures the node agent. Its ClusterDNS, when empty, is the
	// kube-dns Service's address (when the cluster has one), whether or not
	// this node runs an answerer: without one, its pods' queries go to
	// another node's.
	Agent kubelet.Options
	// ServiceCIDRs are the cluster's Service ranges (default
	// 10.96.0.0/12).
	ServiceCIDRs []netip.Prefix
	// DisableProxy and DisableDNS leave the service proxy or the DNS
	// answerer out (another one serves the node); DisableNetworkPolicy
	// leaves NetworkPolicies unenforced on the node.
	DisableProxy, DisableDNS, DisableNetworkPolicy bool
	// DNSPort is the port the node's DNS answers on, at the node's
	// address (default 53).
	DNSPort int
	// DNSUpstreams are the resolvers for names outside the cluster
	// ("ip:port"; default: the host's).
	DNSUpstreams []string
	// ProxyTable names the proxy's nftables table (default "plainkube").
	ProxyTable string
	// PodNetwork is how pods reach other nodes' pods (default host-gw);
	// ClusterCIDRs are the cluster's pod ranges (default 10.42.0.0/16):
	// pod traffic to anywhere else is masqueraded by the node.
	PodNetwork   network.Backend
	ClusterCIDRs []netip.Prefix
	// NetworkPolicyTable names the policy enforcer's nftables table
	// (default "plainkube-netpol").
	NetworkPolicyTable string
	// OwnProcess says the node is all its process runs (a joined agent):
	// the node's /metrics then also serves the process's work queues and
	// recovered panics (reconcile.Metrics), which a server serves itself.
	OwnProcess bool
}

// DNSServiceName is the Service (in kube-system) pods resolve names at.
const DNSServiceName = "kube-dns"

// Run runs the node until ctx ends or one of its parts fails.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	log := opts.Agent.Logger
	if log == nil {
		log = slog.Default()
		opts.Agent.Logger = log
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nodeName := opts.Agent.NodeName
	if nodeName == "" {
		if nodeName, err = kubelet.DefaultNodeName(); err != nil {
			return err
		}
		opts.Agent.NodeName = nodeName
	}
	nodeIP := opts.Agent.NodeIP
	if nodeIP == "" {
		nodeIP = kubelet.HostIPv4()
	}
	nodeAddr, _ := netip.ParseAddr(nodeIP)
	if opts.Agent.PodMTU == 0 {
		if opts.Agent.PodMTU, err = network.PodMTU(opts.PodNetwork, nodeAddr); err != nil {
			return fmt.Errorf("the pods' MTU: %w", err)
		}
	}
	if len(opts.Agent.ClusterDNS) == 0 {
		if ip := lookupClusterDNS(ctx, cs, log.With("component", "kubelet")); ip != "" {
			opts.Agent.ClusterDNS = []string{ip}
		}
	}
	agent, err := kubelet.New(cfg, opts.Agent)
	if err != nil {
		return err
	}
	if opts.OwnProcess {
		agent.MetricsRegisterer().MustRegister(reconcile.Metrics...)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory := informers.NewSharedInformerFactory(cs, 0)
	errs := make(chan error, 5)
	running := 0
	start := func(name string, run func(context.Context) error) {
		running++
		go func() {
			err := run(ctx)
			if err != nil && ctx.Err() == nil {
				err = fmt.Errorf("%s: %w", name, err)
			} else {
				err = nil
			}
			errs <- err
		}()
	}
	podNet, err := network.New(cs, factory, network.Options{NodeName: nodeName, NodeIP: nodeAddr, Backend: opts.PodNetwork,
		ClusterCIDRs: opts.ClusterCIDRs, ServiceCIDRs: opts.ServiceCIDRs, Logger: log})
	if err != nil {
		return err
	}
	start("pod network", podNet.Run)
	if !opts.DisableProxy {
		var addrs []netip.Addr
		if nodeAddr.IsValid() {
			addrs = append(addrs, nodeAddr)
		}
		p, err := proxy.New(cs, factory, proxy.Options{NodeName: nodeName, Addresses: addrs, ServiceCIDRs: opts.ServiceCIDRs,
			Table: opts.ProxyTable, Metrics: agent.MetricsRegisterer(), Logger: log})
		if err != nil {
			return err
		}
		start("service proxy", p.Run)
	}
	if !opts.DisableNetworkPolicy {
		np, err := netpol.New(factory, netpol.Options{NodeName: nodeName, Table: opts.NetworkPolicyTable, Logger: log})
		if err != nil {
			return err
		}
		start("network policy", np.Run)
	}
	if !opts.DisableDNS {
		port := opts.DNSPort
		if port == 0 {
			port = 53
		}
		d, err := dns.New(factory, dns.Options{ClusterDomain: opts.Agent.ClusterDomain, Listen: net.JoinHostPort(nodeIP, strconv.Itoa(port)),
			Upstreams: opts.DNSUpstreams, Logger: log})
		if err != nil {
			return err
		}
		// Without its DNS the node still runs pods: a failure to serve
		// (its port taken by another resolver) is said, not fatal.
		start("cluster DNS", func(ctx context.Context) error {
			if err := d.Run(ctx); err != nil {
				log.With("component", "dns").Error("the node's DNS does not answer; pods here cannot resolve cluster names (free the port, or give --dns-port or --disable-dns)", "err", err)
			}
			return nil
		})
		start("cluster DNS endpoints", func(ctx context.Context) error {
			select {
			case <-d.Ready():
			case <-ctx.Done():
				return nil
			}
			return dns.Advertise(ctx, cs, nodeName, nodeIP, int32(port), log.With("component", "dns"))
		})
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	start("node agent", agent.Run)
	var first error
	for range running {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// lookupClusterDNS is the kube-dns Service's ClusterIP, waiting a little
// for it (a new server creates it as it starts); "" when the cluster has
// none, as an upstream cluster without cluster DNS.
func lookupClusterDNS(ctx context.Context, cs kubernetes.Interface, log *slog.Logger) string {
	for i := 0; i < 20; i++ {
		svc, err := cs.CoreV1().Services("kube-system").Get(ctx, DNSServiceName, metav1.GetOptions{})
		if err == nil {
			if svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != "None" {
				return svc.Spec.ClusterIP
			}
			return ""
		}
		if !apierrors.IsNotFound(err) && !errors.Is(err, context.Canceled) {
			log.Warn("looking up the cluster DNS Service", "err", err)
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(250 * time.Millisecond):
		}
	}
	log.Warn("the cluster has no kube-system/kube-dns Service: pods resolve names with the node's resolver")
	return ""
}
