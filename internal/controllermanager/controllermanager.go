package controllermanager

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/controller/certificates/csrapproving"
	"plainkube.dev/plainkube/internal/controller/certificates/csrcleaner"
	"plainkube.dev/plainkube/internal/controller/certificates/csrsigning"
	"plainkube.dev/plainkube/internal/controller/cronjob"
	"plainkube.dev/plainkube/internal/controller/daemonset"
	"plainkube.dev/plainkube/internal/controller/deployment"
	"plainkube.dev/plainkube/internal/controller/endpoints"
	"plainkube.dev/plainkube/internal/controller/endpointslice"
	"plainkube.dev/plainkube/internal/controller/garbagecollector"
	"plainkube.dev/plainkube/internal/controller/job"
	"plainkube.dev/plainkube/internal/controller/namespace"
	"plainkube.dev/plainkube/internal/controller/nodeipam"
	"plainkube.dev/plainkube/internal/controller/nodelifecycle"
	"plainkube.dev/plainkube/internal/controller/podgc"
	"plainkube.dev/plainkube/internal/controller/replicaset"
	"plainkube.dev/plainkube/internal/controller/rootcacert"
	"plainkube.dev/plainkube/internal/controller/serviceaccount"
	"plainkube.dev/plainkube/internal/controller/servicelb"
	"plainkube.dev/plainkube/internal/controller/statefulset"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Options configure the controllers.
type Options struct {
	// RootCA is published in every namespace as the kube-root-ca.crt
	// ConfigMap; without it that controller does not run.
	RootCA []byte
	// LeaderElect makes the controllers run only while this process holds
	// the kube-system/kube-controller-manager Lease, so that of several
	// controller managers exactly one acts.
	LeaderElect bool
	// Identity names this candidate in the Lease (default: hostname_random).
	Identity string
	// ClusterCIDR is the range node pod CIDRs (/24 each) come from
	// (zero: 10.42.0.0/16).
	ClusterCIDR netip.Prefix
	// NodeMonitorGracePeriod is how long a node may go without a heartbeat
	// before it is marked unreachable (0: 40 s, upstream's default).
	NodeMonitorGracePeriod time.Duration
	// SigningCA signs approved certificate signing requests (the cluster
	// CA, as upstream's --cluster-signing-cert-file/--cluster-signing-key-file);
	// without it the CSR signing controller does not run.
	SigningCA *csrsigning.CA
	// Informers is the informer factory the controllers take their Pod and
	// Node informers from, shared with the process's other components (the
	// scheduler) so that every pod and node is held in memory once. Nil: Run makes
	// one for the controllers; New leaves each controller its own.
	Informers *reconcile.SharedInformers
}

// Lease timings, as upstream's defaults.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// New builds every controller against cfg.
func New(cfg *rest.Config, o Options) ([]reconcile.Controller, error) {
	var out []reconcile.Controller
	add := func(name string, c reconcile.Controller, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, c)
		return nil
	}
	deploy, err := deployment.New(cfg)
	if err := add("deployment controller", deploy, err); err != nil {
		return nil, err
	}
	deploy.Informers = o.Informers
	rs, err := replicaset.New(cfg)
	if err := add("replicaset controller", rs, err); err != nil {
		return nil, err
	}
	rs.Informers = o.Informers
	ds, err := daemonset.New(cfg)
	if err := add("daemonset controller", ds, err); err != nil {
		return nil, err
	}
	ds.Informers = o.Informers
	sts, err := statefulset.New(cfg)
	if err := add("statefulset controller", sts, err); err != nil {
		return nil, err
	}
	sts.Informers = o.Informers
	job, err := job.New(cfg)
	if err := add("job controller", job, err); err != nil {
		return nil, err
	}
	job.Informers = o.Informers
	cj, err := cronjob.New(cfg)
	if err := add("cronjob controller", cj, err); err != nil {
		return nil, err
	}
	gc, err := garbagecollector.New(cfg)
	if err := add("garbage collector", gc, err); err != nil {
		return nil, err
	}
	ns, err := namespace.New(cfg)
	if err := add("namespace controller", ns, err); err != nil {
		return nil, err
	}
	slices, err := endpointslice.New(cfg)
	if err := add("endpointslice controller", slices, err); err != nil {
		return nil, err
	}
	slices.Informers = o.Informers
	eps, err := endpoints.New(cfg)
	if err := add("endpoints controller", eps, err); err != nil {
		return nil, err
	}
	eps.Informers = o.Informers
	sa, err := serviceaccount.New(cfg)
	if err := add("serviceaccount controller", sa, err); err != nil {
		return nil, err
	}
	nl, err := nodelifecycle.New(cfg)
	if err := add("node lifecycle controller", nl, err); err != nil {
		return nil, err
	}
	nl.Informers = o.Informers
	if o.NodeMonitorGracePeriod > 0 {
		nl.GracePeriod = o.NodeMonitorGracePeriod
		nl.StartupGracePeriod = max(nl.StartupGracePeriod, o.NodeMonitorGracePeriod)
	}
	ipam, err := nodeipam.New(cfg)
	if err := add("node IPAM controller", ipam, err); err != nil {
		return nil, err
	}
	if o.ClusterCIDR.IsValid() {
		ipam.ClusterCIDR = o.ClusterCIDR
	}
	ipam.Informers = o.Informers
	slb, err := servicelb.New(cfg)
	if err := add("service load balancer", slb, err); err != nil {
		return nil, err
	}
	slb.Informers = o.Informers
	pg, err := podgc.New(cfg)
	if err := add("pod GC", pg, err); err != nil {
		return nil, err
	}
	pg.Informers = o.Informers
	approver, err := csrapproving.New(cfg)
	if err := add("CSR approving controller", approver, err); err != nil {
		return nil, err
	}
	cleaner, err := csrcleaner.New(cfg)
	if err := add("CSR cleaner", cleaner, err); err != nil {
		return nil, err
	}
	if o.SigningCA != nil {
		signer, err := csrsigning.New(cfg, *o.SigningCA)
		if err := add("CSR signing controller", signer, err); err != nil {
			return nil, err
		}
	}
	if len(o.RootCA) > 0 {
		rc, err := rootcacert.New(cfg, o.RootCA)
		if err := add("root CA publisher", rc, err); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Run runs every controller until ctx ends; with LeaderElect, only while
// this process leads. Losing the lead stops the controllers and returns an
// error, as upstream's controller manager exits.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if o.Informers == nil {
		ictx, cancel := context.WithCancel(ctx)
		o.Informers = reconcile.NewSharedInformers(ictx, client)
		defer o.Informers.Wait()
		defer cancel()
	}
	cs, err := New(cfg, o)
	if err != nil {
		return err
	}
	if !o.LeaderElect {
		reconcile.RunAll(ctx, cs...)
		return nil
	}
	id := o.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + string(uuid.NewUUID())
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager"},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	lost := errors.New("leader election lost")
	var result error
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leaderelection.RunOrDie(lctx, leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		ReleaseOnCancel: true, Name: "kube-controller-manager",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { reconcile.RunAll(ctx, cs...) },
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					result = lost
				}
				cancel()
			},
		},
	})
	return result
}
