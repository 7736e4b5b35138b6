package server

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.etcd.io/etcd/client/pkg/v3/transport"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/allocator"
	"plainkube.dev/plainkube/internal/admission/limitranger"
	"plainkube.dev/plainkube/internal/admission/podsecurity"
	"plainkube.dev/plainkube/internal/admission/policy"
	"plainkube.dev/plainkube/internal/admission/resourcequota"
	saadmission "plainkube.dev/plainkube/internal/admission/serviceaccount"
	admwebhook "plainkube.dev/plainkube/internal/admission/webhook"
	"plainkube.dev/plainkube/internal/apiextensions"
	"plainkube.dev/plainkube/internal/apiserver"
	"plainkube.dev/plainkube/internal/audit"
	"plainkube.dev/plainkube/internal/auth"
	nodeauthz "plainkube.dev/plainkube/internal/auth/node"
	"plainkube.dev/plainkube/internal/auth/rbac"
	rbacpolicy "plainkube.dev/plainkube/internal/auth/rbac/bootstrap"
	"plainkube.dev/plainkube/internal/loopback"
	"plainkube.dev/plainkube/internal/openapi"
	"plainkube.dev/plainkube/internal/pki"
	"plainkube.dev/plainkube/internal/printers"
	"plainkube.dev/plainkube/internal/reconcile"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/registry/all"
	"plainkube.dev/plainkube/internal/registry/core"
	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/etcd"
	"plainkube.dev/plainkube/internal/storage/memory"
	"plainkube.dev/plainkube/internal/version"
)

// Options configure a control plane.
type Options struct {
	// DataDir holds pki/, etcd/ and admin.kubeconfig.
	DataDir     string
	BindAddress string
	Port        int
	// EtcdServers, if set, is an external etcd cluster to use instead of the
	// embedded one.
	EtcdServers []string
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile secure the connection to
	// EtcdServers (--etcd-cafile, --etcd-certfile, --etcd-keyfile): the CA
	// the members' certificates are checked against, and this server's
	// client certificate and key.
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// InMemory keeps everything in memory (tests); it ignores EtcdServers.
	InMemory bool
	// JoinTokenTTL is how long the join token made at the first start
	// lasts (0: it does not expire; plainkube server defaults to
	// DefaultJoinTokenTTL).
	JoinTokenTTL time.Duration
	ServiceCIDR  string
	// ClusterDNS is the kube-dns Service's address (default: the tenth
	// of the service range, 10.96.0.10); "none" creates no such Service.
	ClusterDNS string
	// Components run in-process once the API serves (the controller
	// manager, the scheduler, nodes…). The server package does not import
	// them, so their tests can start a control plane.
	Components []Component
	// LeaderLeases name the kube-system Leases of the leader-elected
	// components the process runs (kube-controller-manager,
	// kube-scheduler): /readyz fails while one of them has no current
	// holder — the server does not call itself ready while, say, no
	// controller manager leads.
	LeaderLeases []string
	Logger       *slog.Logger
	// ServiceAccountIssuer is the iss of service-account tokens and the
	// API server's audience ("": https://kubernetes.default.svc.cluster.local).
	ServiceAccountIssuer string
	// DefaultAdmission runs upstream's default admission plugins that
	// need a controller to finish their work: ServiceAccount (default
	// service account, token volume, rejection of a missing account: the
	// service-account controller makes each namespace's "default"
	// account), TaintNodesByCondition (new nodes are not-ready until the
	// node lifecycle controller sees them Ready) and
	// DefaultTolerationSeconds (300 s tolerations of not-ready and
	// unreachable nodes) and StorageObjectInUseProtection (the
	// pvc-protection and pv-protection finalizers). With them, the server
	// also creates the default StorageClass local-path at start if it is
	// absent (package localpath's provisioner serves it). The plainkube
	// binary turns them on; in-process tests that run no such controllers
	// leave them off.
	DefaultAdmission bool
	// PodSecurityExemptions are the users, namespaces and runtime classes
	// the PodSecurity plugin leaves alone (upstream's admission
	// configuration's exemptions; the --pod-security-exempt-* flags).
	PodSecurityExemptions podsecurity.Exemptions
	// ExtraAdmission are plugins run after all others (tests).
	ExtraAdmission []admission.Plugin
	// EnableAdmissionPlugins and DisableAdmissionPlugins turn upstream's
	// admission plugins on and off by name, as kube-apiserver's
	// --enable-admission-plugins and --disable-admission-plugins (the
	// plugins DefaultAdmission leaves off count as off by default).
	EnableAdmissionPlugins, DisableAdmissionPlugins []string
	// AdmissionControlConfigFile is an AdmissionConfiguration giving
	// plugins their configuration (--admission-control-config-file; only
	// EventRateLimit's is read).
	AdmissionControlConfigFile string
	// EncryptionProviderConfig is an EncryptionConfiguration saying which
	// resources are encrypted in storage, and how
	// (--encryption-provider-config). "": the one the server generates in
	// its data dir at first start (Secrets, aescbc), or none in memory.
	EncryptionProviderConfig string
	// Audit, with a Path, writes the audit log (--audit-log-path,
	// --audit-policy-file, --audit-log-maxage/-maxbackup/-maxsize).
	Audit audit.Options
	// ServingCertFile and ServingKeyFile are a certificate (PEM, followed
	// by its chain) and key to serve instead of the one the cluster CA
	// issues (upstream's --tls-cert-file and --tls-private-key-file); the
	// admin kubeconfig then trusts that certificate as well.
	ServingCertFile, ServingKeyFile string
	// ClientCAFile holds more CA certificates (PEM) whose client
	// certificates authenticate, besides the cluster CA's (upstream's
	// --client-ca-file; the cluster CA stays, as its nodes' and admin's
	// certificates need it).
	ClientCAFile string
	// ServiceAccountSigningKeyFile is a private key (PEM) service-account
	// tokens are signed and checked with instead of the data directory's
	// sa.key (upstream's --service-account-signing-key-file).
	ServiceAccountSigningKeyFile string
	// AdvertiseAddress is the address the kubernetes Service's endpoints
	// name (upstream's --advertise-address; "": the host's first
	// address), and join commands too unless BindAddress is specific.
	AdvertiseAddress string
	// ShutdownGrace is how long a stop waits for requests in flight and
	// for clients to close their connections before closing them (0: 5 s;
	// Go's HTTP/2 server keeps an idle connection a second after telling
	// its client to go away, which tests need not wait out).
	ShutdownGrace time.Duration
	// AuthorizeAll allows every request, as upstream's
	// --authorization-mode=AlwaysAllow (tests only; the default is
	// upstream's Node,RBAC).
	AuthorizeAll bool
	// DialAggregated opens the API server's connections to aggregated API
	// servers' endpoints (nil: a plain dialer). Tests route them to a
	// loopback listener.
	DialAggregated func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Component is a part of the cluster run inside the server process until
// ctx ends.
type Component func(ctx context.Context, env ComponentEnv) error

// ComponentEnv is what a component is given.
type ComponentEnv struct {
	// ConfigAs is a loopback client config acting as user. The wiring
	// gives each in-process component its own identity with it, as
	// upstream's components have theirs (auth.SchedulerUser,
	// auth.ControllerManagerUser, auth.NodeUser…): the identity travels
	// in the request's context, which only this process can set, never in
	// anything a client sends.
	ConfigAs func(user *auth.User) *rest.Config
	// AdminConfig is a loopback client config acting as the cluster admin
	// (system:masters), for test devices only (simulated nodes, a
	// component under test): the cluster's own components use ConfigAs.
	AdminConfig *rest.Config
	// CAPEM is the cluster CA certificate (for kube-root-ca.crt, kubeconfigs…).
	CAPEM []byte
	// URL is the API server's HTTPS address.
	URL string
	// IssueServingCert signs a node agent's serving certificate with the
	// kubelet-serving CA (for the server's own node, which needs no CSR).
	IssueServingCert func(dnsNames []string, ips []net.IP) (certPEM, keyPEM []byte, err error)
	// CACert and CAKey are the cluster CA, KubeletServingCACert and
	// KubeletServingCAKey the kubelet-serving CA (pki.Bundle), for the
	// controller manager's CSR signer.
	CACert               *x509.Certificate
	CAKey                crypto.Signer
	KubeletServingCACert *x509.Certificate
	KubeletServingCAKey  crypto.Signer
	// Informers is one informer factory for every component of this
	// process, so that what several of them watch (pods) is held in memory
	// once. It reads as the controller manager, as upstream's
	// kube-controller-manager's shared informers do (its role lists and
	// watches every resource); its informers run until the server stops.
	Informers *reconcile.SharedInformers
	// Metrics is the API server's /metrics, for a component to add its own
	// to (the scheduler's; the work queues' are there already).
	Metrics prometheus.Registerer
}

// ServiceAccountConfig is a loopback client config acting as the
// ServiceAccount sa, as a token of it would authenticate: the controller
// manager's per-controller identities (controllermanager.Options).
func (e ComponentEnv) ServiceAccountConfig(sa *corev1.ServiceAccount) *rest.Config {
	return e.ConfigAs(auth.ServiceAccountUser(sa.Namespace, sa.Name, string(sa.UID)))
}

// DefaultDataDir is /var/lib/plainkube for root and ~/.plainkube otherwise.
func DefaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/plainkube"
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".plainkube")
}

// Server is a running control plane.
type Server struct {
	API            *apiserver.Server
	URL            string
	KubeconfigPath string
	PKI            *pki.Bundle
	store          storage.Interface
	closeStore     func() error
	closeAudit     func() error
	httpServer     *http.Server
	listener       net.Listener
	log            *slog.Logger
	stopped        chan struct{}
	// components are the in-process components' goroutines.
	components sync.WaitGroup
	cancel     context.CancelFunc
	stopOnce   sync.Once
	// shutdownGrace is Options.ShutdownGrace.
	shutdownGrace time.Duration

	// JoinURL, JoinToken and CAHash are what `plainkube agent` joins with
	// (see JoinCommand).
	JoinURL, CAHash string
	JoinToken       JoinToken
}

// Start brings up a control plane and returns once it is ready to serve.
// Cancelling ctx stops it; Wait returns when it has stopped.
func Start(ctx context.Context, opts Options) (*Server, error) {
	apiserver.WarmTypeConverter()
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "apiserver")
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = "10.96.0.0/12"
	}
	cidr, err := netip.ParsePrefix(opts.ServiceCIDR)
	if err != nil {
		return nil, fmt.Errorf("--service-cidr: %w", err)
	}
	if err := lockDataDir(opts.DataDir, log); err != nil {
		return nil, err
	}
	alloc := allocator.New(nil, cidr, allocator.DefaultNodePorts)
	firstIP := alloc.FirstIP()
	clusterDNS, err := ClusterDNSAddress(opts.ClusterDNS, cidr)
	if err != nil {
		return nil, err
	}
	bundle, err := pki.LoadOrCreate(filepath.Join(opts.DataDir, "pki"), pki.Options{ExtraIPs: []net.IP{net.IP(firstIP.AsSlice())}})
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{PKI: bundle, log: log, stopped: make(chan struct{}), cancel: cancel, shutdownGrace: opts.ShutdownGrace}
	var etcdStore *etcd.Store
	switch {
	case opts.InMemory:
		m := memory.New(memory.Options{})
		s.store, s.closeStore = m, m.Close
	case len(opts.EtcdServers) > 0:
		tlsConfig, err := etcdClientTLS(opts)
		if err != nil {
			return nil, err
		}
		st, err := etcd.Dial(opts.EtcdServers, tlsConfig)
		if err != nil {
			return nil, fmt.Errorf("etcd %v: %w", opts.EtcdServers, err)
		}
		s.store, s.closeStore, etcdStore = st, st.Close, st
	default:
		e, err := etcd.StartEmbedded(filepath.Join(opts.DataDir, "etcd"), embeddedEtcdListener(opts.DataDir, log)...)
		if err != nil {
			return nil, fmt.Errorf("embedded etcd: %w", err)
		}
		etcdStore = e.Store()
		s.store, s.closeStore = etcdStore, e.Close
	}
	resources := all.Resources()
	if s.store, err = encryptAtRest(ctx, s.store, opts, resources); err != nil {
		s.stop()
		return nil, err
	}
	// An in-memory store whose values are not encrypted starts with what
	// every start writes the same (bootstrapSeed).
	seedable, planted := opts.InMemory && opts.EncryptionProviderConfig == "", false
	if seedable {
		if planted, err = plantSeed(ctx, s.store); err != nil {
			s.stop()
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
	}
	alloc = allocator.New(s.store, cidr, allocator.DefaultNodePorts)
	var auditLog *audit.Logger
	if opts.Audit.Path != "" {
		if auditLog, err = audit.New(opts.Audit); err != nil {
			s.stop()
			return nil, fmt.Errorf("audit log: %w", err)
		}
		s.closeAudit = auditLog.Close
	}

	kubeletClient, err := kubeletClientFor(bundle)
	if err != nil {
		s.stop()
		return nil, err
	}
	bootstrapTokens := &auth.BootstrapTokenAuthenticator{Logger: log}
	saKey := bundle.ServiceAccountKey
	if opts.ServiceAccountSigningKeyFile != "" {
		if saKey, err = pki.ReadKeyFile(opts.ServiceAccountSigningKeyFile); err != nil {
			s.stop()
			return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
	}
	saTokens, err := auth.NewServiceAccountTokens(saKey, opts.ServiceAccountIssuer, nil)
	if err != nil {
		s.stop()
		return nil, err
	}
	saAdmission := saadmission.New()
	objects := &serverObjects{}
	scheme := apiserver.Scheme()
	rbacAuthz := rbac.New(nil) // reads its roles once the API serves them (startRBAC)
	// As upstream's --authorization-mode=Node,RBAC (with system:masters
	// allowed first): what else anyone may do is what RBAC grants.
	nodeGraph := nodeauthz.NewGraph() // filled once the API serves pods (startNodeGraph)
	var authz auth.Authorizer = auth.Chain{auth.MastersAuthorizer{}, nodeauthz.New(nodeGraph, rbacpolicy.NodeRules()), rbacAuthz}
	if opts.AuthorizeAll {
		authz = auth.AlwaysAllowAuthorizer{}
	}
	validatingPolicies := policy.NewValidating(authz) // reads the policies once the API serves them
	validatingPolicies.BuiltinTypes = apiserver.TypeConverter
	// The webhooks read their configurations once the API serves
	// (startWebhooks).
	// /metrics: Go's and the process's own metrics, as upstream's
	// components have them, the work queues' and leader elections' of
	// every controller in the process, the admission metrics; the API
	// server adds its requests' and storage's, components theirs.
	metricsRegistry := prometheus.NewRegistry()
	metricsRegistry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metricsRegistry.MustRegister(reconcile.Metrics...)
	admissionMetrics := admission.NewMetrics(metricsRegistry)
	webhooks := admwebhook.New(admwebhook.Options{Authorizer: authz, Logger: log, Metrics: admissionMetrics})
	deps := admissionDeps{objects: objects, serviceAccounts: saAdmission, authz: authz, rbac: rbacAuthz,
		services: alloc, policies: validatingPolicies, webhooks: webhooks, controllerDefaults: opts.DefaultAdmission, extra: opts.ExtraAdmission,
		limitRanger: limitranger.New(), podSecurity: podsecurity.New(), resourceQuota: resourcequota.New(),
		enable: opts.EnableAdmissionPlugins, disable: opts.DisableAdmissionPlugins, kinds: &serverKinds{}}
	if deps.pluginConfigs, err = readAdmissionConfig(opts.AdmissionControlConfigFile); err != nil {
		s.stop()
		return nil, err
	}
	chain, err := admissionChain(deps)
	if err != nil {
		s.stop()
		return nil, err
	}
	api, err := apiserver.New(apiserver.Config{
		Storage:          s.store,
		Resources:        resources,
		Authenticator:    auth.Union{auth.ClientCertAuthenticator{}, saTokens, bootstrapTokens},
		ServiceAccounts:  saTokens,
		Admission:        chain.Instrument(admissionMetrics),
		AdmissionMetrics: admissionMetrics,
		Metrics:          metricsRegistry,
		Authorizer:       authz,
		Version: apiserver.VersionInfo{Major: version.Major, Minor: version.Minor, GitVersion: version.GitVersion(),
			GitCommit: version.GitCommit, GoVersion: runtime.Version(), Platform: version.Platform()},
		KubeletClient: kubeletClient,
		Components:    componentChecks(etcdStore),
		Audit:         auditLog,
		LiveChecks:    liveChecks(etcdStore),
		ReadyChecks:   readyChecks(etcdStore, opts.LeaderLeases),
		ScaleTable:    printers.For(autoscalingv1.SchemeGroupVersion.WithKind("Scale")),
		OpenAPI:       openapi.New(resources, scheme),
		Logger:        log,
	})
	if err != nil {
		s.stop()
		return nil, err
	}
	s.API = api
	saAdmission.Objects = api
	objects.api = api
	deps.kinds.api = api
	if bootstrapTokens.Get, err = secretGetter(s.LoopbackConfig()); err != nil {
		s.stop()
		return nil, err
	}
	// Custom resources: the CRD controllers run in-process as API clients;
	// the server is ready once the CRDs stored are served.
	crdsServed := make(chan struct{})
	api.AddReadinessGate(crdsServed)
	rbacReady := make(chan struct{})
	api.AddReadinessGate(rbacReady)
	admissionReady := make(chan struct{})
	api.AddReadinessGate(admissionReady)
	graphReady := make(chan struct{})
	api.AddReadinessGate(graphReady)
	apiServicesRegistered := make(chan struct{})
	api.AddReadinessGate(apiServicesRegistered)
	go api.Run(ctx)
	// Each reader of the server's own API gets its informers over the
	// loopback client (startInformers).
	if err := startInformers(ctx, s.LoopbackConfig(), log, "admission policies", func(f informers.SharedInformerFactory, cs kubernetes.Interface) (func() bool, error) {
		return validatingPolicies.Start(ctx, s.LoopbackConfig(), f, cs, log)
	}, nil); err != nil {
		s.stop()
		return nil, err
	}
	webhookClients, err := startWebhooks(ctx, s.LoopbackConfig(), log, webhooks, api)
	if err != nil {
		s.stop()
		return nil, err
	}
	if err := startRBAC(ctx, s.LoopbackConfig(), rbacAuthz, log, rbacReady, planted); err != nil {
		s.stop()
		return nil, err
	}
	if err := startFlowControl(ctx, s.LoopbackConfig(), api, log); err != nil {
		s.stop()
		return nil, err
	}
	if err := startAdmission(ctx, s.LoopbackConfig(), log, admissionReady, deps, opts.PodSecurityExemptions); err != nil {
		s.stop()
		return nil, err
	}
	if err := startNodeGraph(ctx, s.LoopbackConfig(), log, nodeGraph, graphReady); err != nil {
		s.stop()
		return nil, err
	}
	synced, err := apiextensions.Start(ctx, s.LoopbackConfig(), api, webhookClients)
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("CRD controllers: %w", err)
	}
	go func() {
		select {
		case <-synced:
			close(crdsServed)
		case <-ctx.Done():
		}
	}()
	if err := startAggregator(ctx, s.LoopbackConfig(), api, bundle, resources, opts.DialAggregated, log, apiServicesRegistered); err != nil {
		s.stop()
		return nil, fmt.Errorf("aggregator: %w", err)
	}

	tlsConfig, err := servingTLS(bundle, opts)
	if err != nil {
		s.stop()
		return nil, err
	}
	// HTTP/2 as upstream serves it (Serve on a TLS listener offers only
	// what NextProtos says): client-go multiplexes its requests and
	// watches over one connection; upgrades (exec, attach, port-forward
	// over SPDY or WebSockets) ask for HTTP/1.1.
	tlsConfig.NextProtos = []string{"h2", "http/1.1"}
	addr := net.JoinHostPort(opts.BindAddress, strconv.Itoa(opts.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.listener = ln
	port := ln.Addr().(*net.TCPAddr).Port
	s.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	// As upstream's secure serving: headers within 32 s, an idle
	// connection closed after 90 s; a request's body is read under the
	// request's own deadline (apiserver.requestDeadline), watches' and
	// streams' without one.
	s.httpServer = &http.Server{Handler: api, TLSConfig: tlsConfig, ReadHeaderTimeout: 32 * time.Second, IdleTimeout: 90 * time.Second,
		// As upstream: many watches share one client connection.
		HTTP2:    &http.HTTP2Config{MaxConcurrentStreams: 1000},
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	go func() {
		if err := s.httpServer.Serve(tls.NewListener(ln, tlsConfig)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serving", "err", err)
		}
	}()

	select {
	case <-api.Ready():
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
	advertise := opts.AdvertiseAddress
	if advertise == "" {
		advertise = hostIP()
	}
	if err := bootstrap(ctx, s.LoopbackConfig(), firstIP.String(), advertise, port, clusterDNS, planted); err != nil {
		s.stop()
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	if opts.DefaultAdmission {
		if err := ensureLocalPathClass(ctx, s.LoopbackConfig()); err != nil {
			s.stop()
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
	}
	s.JoinURL = "https://" + net.JoinHostPort(advertiseHost(opts.BindAddress, advertise), strconv.Itoa(port))
	s.CAHash = pki.CertHash(bundle.CACert)
	if s.JoinToken, err = ensureJoinToken(ctx, s.LoopbackConfig(), opts.DataDir, opts.JoinTokenTTL); err != nil {
		s.stop()
		return nil, fmt.Errorf("join token: %w", err)
	}
	if err := ensureClusterInfo(ctx, s.LoopbackConfig(), s.JoinURL, bundle.CAPEM); err != nil {
		s.stop()
		return nil, fmt.Errorf("cluster-info: %w", err)
	}
	if err := ensureExtensionAuthentication(ctx, s.LoopbackConfig(), bundle); err != nil {
		s.stop()
		return nil, fmt.Errorf("extension-apiserver-authentication: %w", err)
	}
	s.KubeconfigPath = filepath.Join(opts.DataDir, "admin.kubeconfig")
	trusted, err := kubeconfigCA(bundle, opts)
	if err != nil {
		s.stop()
		return nil, err
	}
	if err := pki.WriteKubeconfig(s.KubeconfigPath, s.URL, trusted, bundle.AdminCertPEM, bundle.AdminKeyPEM); err != nil {
		s.stop()
		return nil, err
	}
	if seedable {
		if err := takeSeed(ctx, s.store, resources); err != nil {
			log.Warn("keeping the bootstrap objects for the next in-memory server", "err", err)
		}
	}
	go startCompactor(ctx, s.store, etcdStore, log)
	informerClient, err := kubernetes.NewForConfig(s.ConfigAs(auth.ControllerManagerUser()))
	if err != nil {
		s.stop()
		return nil, err
	}
	env := ComponentEnv{ConfigAs: s.ConfigAs, AdminConfig: s.LoopbackConfig(), CAPEM: bundle.CAPEM, URL: s.URL,
		IssueServingCert: bundle.IssueKubeletServingCert, CACert: bundle.CACert, CAKey: bundle.CAKey,
		KubeletServingCACert: bundle.KubeletServingCACert, KubeletServingCAKey: bundle.KubeletServingCAKey,
		Informers: reconcile.NewSharedInformers(ctx, informerClient), Metrics: metricsRegistry}
	for _, run := range opts.Components {
		s.components.Go(func() {
			if err := run(ctx, env); err != nil && ctx.Err() == nil {
				log.Error("component failed", "err", err)
			}
		})
	}
	go func() {
		<-ctx.Done()
		s.stop()
	}()
	return s, nil
}

// LoopbackConfig is the API server's own loopback client config, acting
// as system:apiserver in system:masters: for what upstream's
// kube-apiserver does privileged (its RBAC bootstrap, the CRD controllers,
// the kubernetes Service) and for tests acting as the admin.
func (s *Server) LoopbackConfig() *rest.Config { return s.ConfigAs(auth.APIServerUser()) }

// Snapshot reads everything the server stores, for Restore (tests that
// share one control plane: package testenv's Reset).
func (s *Server) Snapshot(ctx context.Context) (*storage.Snapshot, error) {
	return storage.TakeSnapshot(ctx, s.store)
}

// Restore makes the store hold what snap held, by ordinary writes that
// every watcher sees (see storage.Snapshot.Restore), and reports how many.
func (s *Server) Restore(ctx context.Context, snap *storage.Snapshot) (int, error) {
	return snap.Restore(ctx, s.store)
}

// ConfigAs is an in-process client config acting as user.
func (s *Server) ConfigAs(user *auth.User) *rest.Config { return loopback.Config(s.API, user) }

func (s *Server) stop() { s.stopOnce.Do(s.shutdown) }

// componentStopTimeout bounds how long a stop waits for the in-process
// components to end.
const componentStopTimeout = 5 * time.Second

func (s *Server) shutdown() {
	defer close(s.stopped)
	s.cancel()
	// The components end first, while the API still serves them: the
	// scheduler and the controller manager give up their leader Leases,
	// so that the next start leads at once rather than after the Leases
	// expire.
	done := make(chan struct{})
	go func() { s.components.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(componentStopTimeout):
		s.log.Warn("components still running at shutdown", "waited", componentStopTimeout)
	}
	if s.httpServer != nil {
		grace := s.shutdownGrace
		if grace <= 0 {
			grace = 5 * time.Second
		}
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		s.httpServer.Shutdown(sctx)
		cancel()
		s.httpServer.Close()
	}
	if s.closeStore != nil {
		s.closeStore()
	}
	if s.closeAudit != nil {
		s.closeAudit()
	}
}

// hostIP is the address other hosts reach this one at: the first global
// unicast IPv4 address of an interface that is up, or 127.0.0.1.
func hostIP() string {
	ifaces, _ := net.Interfaces()
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// advertiseHost is the address other hosts reach the API server at: the
// bind address unless it is a wildcard, else the host's address.
func advertiseHost(bind, host string) string {
	if ip := net.ParseIP(bind); bind == "" || (ip != nil && ip.IsUnspecified()) {
		return host
	}
	return bind
}

// startCompactor keeps five minutes of history in storage, as upstream does.
func startCompactor(ctx context.Context, st storage.Interface, members *etcd.Store, log *slog.Logger) {
	const interval = 5 * time.Minute
	var last int64
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if last > 0 {
			if err := st.Compact(ctx, last); err != nil && !errors.Is(err, storage.ErrCompacted) {
				log.Warn("compaction failed", "revision", last, "err", err)
			}
			// What compactions free is reused by etcd but not given back
			// to the disk: defragment a member once it is mostly free.
			if members != nil {
				done, err := members.DefragmentIfFragmented(ctx)
				if len(done) > 0 {
					log.Info("defragmented etcd", "members", done)
				}
				if err != nil {
					log.Warn("defragmentation", "err", err)
				}
			}
		}
		rev, err := st.CurrentRevision(ctx)
		if err == nil {
			last = rev
		}
	}
}

// Wait blocks until the server has stopped after its context ended.
func (s *Server) Wait() { <-s.stopped }

// kubeletClientFor is the API server's client for node agents' APIs: a
// client certificate of the cluster CA in system:masters, trusting only
// the kubelet-serving CA (a node's serving certificate, for the address
// dialled, is the only one it accepts; see pki.Bundle).
func kubeletClientFor(b *pki.Bundle) (*http.Client, error) {
	certPEM, keyPEM, err := b.IssueClientCert("kube-apiserver-kubelet-client", []string{auth.GroupMasters})
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(b.KubeletServingCACert)
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 16,
	}}, nil
}

// ClusterDNSAddress is the kube-dns Service's address: flag ("none" for
// no cluster DNS), else the tenth address of the service range, as
// upstream's installers choose (10.96.0.10).
func ClusterDNSAddress(flag string, serviceCIDR netip.Prefix) (string, error) {
	switch flag {
	case "none":
		return "", nil
	case "":
		a := serviceCIDR.Masked().Addr()
		for range 10 {
			a = a.Next()
		}
		return a.String(), nil
	}
	a, err := netip.ParseAddr(flag)
	if err != nil || !serviceCIDR.Contains(a) {
		return "", fmt.Errorf("--cluster-dns %q: not an address in the service range %s", flag, serviceCIDR)
	}
	return a.String(), nil
}

// componentChecks are the components whose health the API server reports
// (/api/v1/componentstatuses), under upstream's names: the scheduler and
// the controller manager by their leader Leases, wherever they run, and
// each member of etcd (none when the store is in memory).
// etcdClientTLS is the TLS configuration of the connection to an external
// etcd; nil when no file is given (plain http:// members).
func etcdClientTLS(opts Options) (*tls.Config, error) {
	if opts.EtcdCAFile == "" && opts.EtcdCertFile == "" && opts.EtcdKeyFile == "" {
		return nil, nil
	}
	if (opts.EtcdCertFile == "") != (opts.EtcdKeyFile == "") {
		return nil, errors.New("--etcd-certfile and --etcd-keyfile go together")
	}
	info := transport.TLSInfo{TrustedCAFile: opts.EtcdCAFile, CertFile: opts.EtcdCertFile, KeyFile: opts.EtcdKeyFile}
	c, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}
	return c, nil
}

// etcdCheckTimeout bounds each health check of etcd, as upstream's
// --etcd-healthcheck-timeout and --etcd-readycheck-timeout.
const etcdCheckTimeout = 2 * time.Second

// liveChecks are /livez's, /healthz's and /readyz's checks: etcd answers a
// linearizable read (not checked for an in-memory store).
func liveChecks(st *etcd.Store) []apiserver.HealthCheck {
	if st == nil {
		return nil
	}
	return []apiserver.HealthCheck{{Name: "etcd", Check: etcdCheck(st.Healthy)}}
}

// readyChecks are /readyz's own: etcd again under upstream's name for it,
// no etcd alarm raised, and that each leader Lease has a current holder.
func readyChecks(st *etcd.Store, leases []string) []apiserver.HealthCheck {
	var checks []apiserver.HealthCheck
	if st != nil {
		checks = append(checks, apiserver.HealthCheck{Name: "etcd-readiness", Check: etcdCheck(st.Healthy)},
			// A raised alarm (NOSPACE: the backend quota is used up) leaves
			// etcd taking reads and deletes only.
			apiserver.HealthCheck{Name: "etcd-alarms", Check: etcdCheck(st.Alarms)})
	}
	for _, name := range leases {
		probe := core.LeaseProbe(metav1.NamespaceSystem, name)
		checks = append(checks, apiserver.HealthCheck{Name: "leader/" + name, Check: func(ctx context.Context, api registry.API) error {
			_, _, err := probe(ctx, api)
			return err
		}})
	}
	return checks
}

// etcdCheck is a health check asking etcd (probe) within etcdCheckTimeout.
func etcdCheck(probe func(context.Context) error) func(context.Context, registry.API) error {
	return func(ctx context.Context, _ registry.API) error {
		ctx, cancel := context.WithTimeout(ctx, etcdCheckTimeout)
		defer cancel()
		return probe(ctx)
	}
}

func componentChecks(st *etcd.Store) []registry.ComponentCheck {
	checks := []registry.ComponentCheck{
		{Name: "scheduler", Probe: core.LeaseProbe(metav1.NamespaceSystem, "kube-scheduler")},
		{Name: "controller-manager", Probe: core.LeaseProbe(metav1.NamespaceSystem, "kube-controller-manager")},
	}
	if st == nil {
		return checks
	}
	for i, ep := range st.Endpoints() {
		checks = append(checks, registry.ComponentCheck{Name: fmt.Sprintf("etcd-%d", i),
			Probe: func(ctx context.Context, _ registry.API) (corev1.ConditionStatus, string, error) {
				if err := st.Probe(ctx, ep); err != nil {
					return corev1.ConditionFalse, "", fmt.Errorf("error getting data from etcd: %w", err)
				}
				return corev1.ConditionTrue, "ok", nil
			}})
	}
	return checks
}
