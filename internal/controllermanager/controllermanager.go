package controllermanager

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/controller/certificates/csrsigning"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Options configure the controllers.
type Options struct {
	// RootCA is published in every namespace as the kube-root-ca.crt
	// ConfigMap; without it that controller does not run.
	RootCA []byte
	// LeaderElection makes the controllers run only while this process
	// holds the Lease (default kube-system/kube-controller-manager), so
	// that of several controller managers exactly one acts; nil: they run
	// without.
	LeaderElection *reconcile.LeaderElection
	// ClusterCIDR is the range node pod CIDRs (/24 each) come from
	// (zero: 10.42.0.0/16).
	ClusterCIDR netip.Prefix
	// NodeMonitorGracePeriod is how long a node may go without a heartbeat
	// before it is marked unreachable (0: 40 s, upstream's default).
	NodeMonitorGracePeriod time.Duration
	// Autoscaling configures the horizontal pod autoscaler, as upstream's
	// --horizontal-pod-autoscaler-* flags (zero fields: their defaults).
	Autoscaling AutoscalingOptions
	// SigningCA signs approved certificate signing requests (the cluster
	// CA, as upstream's --cluster-signing-cert-file/--cluster-signing-key-file);
	// without it the CSR signing controller does not run.
	SigningCA *csrsigning.CA
	// KubeletServingCA signs approved kubernetes.io/kubelet-serving
	// requests (upstream's --cluster-signing-kubelet-serving-cert-file/
	// -key-file); SigningCA never does, so without it they stay unsigned
	// (see package csrsigning).
	KubeletServingCA *csrsigning.CA
	// ServiceCIDRs are the cluster's Service ranges, whose addresses the
	// CSR approver refuses in nodes' serving certificates (nil:
	// 10.96.0.0/12).
	ServiceCIDRs []netip.Prefix
	// Informers is the informer factory the controllers take their Pod and
	// Node informers from, shared with the process's other components (the
	// scheduler) so that every pod and node is held in memory once. Nil: Run makes
	// one for the controllers; New leaves each controller its own.
	Informers *reconcile.SharedInformers
	// HelmCacheDir keeps the charts the helm controller downloads (empty:
	// the user's cache directory).
	HelmCacheDir string
	// Controllers says which controllers run, as upstream's --controllers:
	// "*" the ones enabled by default, "name" one more, "-name" one less
	// (see Registry); empty means "*".
	Controllers []string
	// ServiceAccountConfig, when set, runs each controller as its own
	// kube-system ServiceAccount (Registration.ServiceAccount), as
	// upstream's --use-service-account-credentials: New creates the
	// account if it is missing, with the manager's own config, and builds
	// the controller on the config this returns for that account. Nil:
	// every controller uses the manager's config.
	ServiceAccountConfig func(sa *corev1.ServiceAccount) *rest.Config
	// Synced, if set, is called once, when every controller has synced
	// its informers for the first time (so a test environment can return
	// when the controllers act on what the API holds).
	Synced func()

	// accountConfig is the config of a kube-system ServiceAccount, for a
	// constructor whose controller runs two of upstream's (New sets it
	// with ServiceAccountConfig).
	accountConfig func(name string) (*rest.Config, error)
}

// AutoscalingOptions are upstream's --horizontal-pod-autoscaler-sync-period,
// -tolerance and -downscale-stabilization.
type AutoscalingOptions struct {
	SyncPeriod             time.Duration
	Tolerance              float64
	DownscaleStabilization time.Duration
}

// New builds the controllers o.Controllers enables against cfg, in
// Registry order.
func New(cfg *rest.Config, o Options) ([]reconcile.Controller, error) {
	if err := ValidateControllers(o.Controllers); err != nil {
		return nil, err
	}
	accounts, err := newServiceAccounts(cfg, o.ServiceAccountConfig)
	if err != nil {
		return nil, err
	}
	if o.ServiceAccountConfig != nil {
		o.accountConfig = accounts.config
	}
	var out []reconcile.Controller
	for _, r := range Registry {
		if !Enabled(o.Controllers, r) {
			continue
		}
		ccfg, err := accounts.config(r.ServiceAccount)
		if err != nil {
			return nil, fmt.Errorf("%s controller: %w", r.Name, err)
		}
		c, err := r.New(ccfg, o)
		if err != nil {
			return nil, fmt.Errorf("%s controller: %w", r.Name, err)
		}
		if c != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// serviceAccounts gives each controller the config of its ServiceAccount.
type serviceAccounts struct {
	client  kubernetes.Interface
	configs map[string]*rest.Config
	as      func(*corev1.ServiceAccount) *rest.Config
}

func newServiceAccounts(cfg *rest.Config, as func(*corev1.ServiceAccount) *rest.Config) (*serviceAccounts, error) {
	if as == nil {
		return &serviceAccounts{configs: map[string]*rest.Config{"": cfg}}, nil
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &serviceAccounts{client: client, configs: map[string]*rest.Config{}, as: as}, nil
}

// config is the config of the kube-system ServiceAccount name, which it
// creates if it is missing (as upstream's service-account client builder
// does); without ServiceAccountConfig, the manager's own.
func (s *serviceAccounts) config(name string) (*rest.Config, error) {
	if s.as == nil {
		return s.configs[""], nil
	}
	if c, ok := s.configs[name]; ok {
		return c, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	accounts := s.client.CoreV1().ServiceAccounts(metav1.NamespaceSystem)
	var sa *corev1.ServiceAccount
	// Retried (every 500 ms, for 30 s at most) as upstream's client
	// builder waits: a server just started may not serve it yet.
	var err error
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		sa, err = accounts.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			sa, err = accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem}}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				sa, err = accounts.Get(ctx, name, metav1.GetOptions{})
			}
		}
		return err == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("service account %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	c := s.as(sa)
	s.configs[name] = c
	return c, nil
}

// Run runs every controller until ctx ends; with LeaderElection, only
// while this process leads: a manager that loses the Lease stops its
// controllers, campaigns again, and starts them afresh when it leads again.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if o.Synced != nil {
		ctx = reconcile.WhenAllSynced(ctx, sync.OnceFunc(o.Synced))
	}
	if o.Informers == nil {
		ictx, cancel := context.WithCancel(ctx)
		o.Informers = reconcile.NewSharedInformers(ictx, client)
		defer o.Informers.Wait()
		defer cancel()
	}
	if o.LeaderElection == nil {
		cs, err := New(cfg, o)
		if err != nil {
			return err
		}
		reconcile.RunAll(ctx, cs...)
		return nil
	}
	if err := ValidateControllers(o.Controllers); err != nil {
		return err
	}
	// The controllers are built for each term (a controller's queue ends
	// with its term), after the Lease is taken: a starting server is ready
	// once its controller manager leads.
	reconcile.RunLeading(ctx, client, *o.LeaderElection, "kube-controller-manager", slog.Default().With("component", "kube-controller-manager"), func(term context.Context) {
		for {
			cs, err := New(cfg, o)
			if err == nil {
				reconcile.RunAll(term, cs...)
				return
			}
			slog.Error("building the controllers; retrying", "component", "kube-controller-manager", "err", err)
			select {
			case <-term.Done():
				return
			case <-time.After(time.Second):
			}
		}
	})
	return nil
}
