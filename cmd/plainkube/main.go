// Command plainkube is Kubernetes, implemented plainly, in one binary.
//
//	plainkube server   run the control plane (API server over etcd)
//	plainkube agent    join this host to a cluster as a node
//	plainkube dev cluster  a multi-host cluster on this machine
//	plainkube version  print the version
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/bench"
	"plainkube.dev/plainkube/internal/controller/certificates/csrsigning"
	"plainkube.dev/plainkube/internal/controller/podautoscaler"
	"plainkube.dev/plainkube/internal/controllermanager"
	"plainkube.dev/plainkube/internal/image"
	"plainkube.dev/plainkube/internal/kubelet"
	"plainkube.dev/plainkube/internal/kubelet/containerd"
	podnetwork "plainkube.dev/plainkube/internal/kubelet/network"
	"plainkube.dev/plainkube/internal/kubelet/sim"
	"plainkube.dev/plainkube/internal/kubelet/tlsbootstrap"
	"plainkube.dev/plainkube/internal/netpol"
	"plainkube.dev/plainkube/internal/network"
	"plainkube.dev/plainkube/internal/node"
	"plainkube.dev/plainkube/internal/pki"
	"plainkube.dev/plainkube/internal/reconcile"
	"plainkube.dev/plainkube/internal/scheduler"
	schedconfig "plainkube.dev/plainkube/internal/scheduler/config"
	"plainkube.dev/plainkube/internal/server"
	"plainkube.dev/plainkube/internal/version"
)

const usage = `plainkube: Kubernetes, implemented plainly.

Usage:
  plainkube server [flags]   run the control plane
  plainkube agent --server URL --token T --ca-cert-hash sha256:...
                             join this host to a cluster as a node (root)
  plainkube controller-manager --kubeconfig FILE
                             run the controllers against any API server
  plainkube scheduler --kubeconfig FILE [--config FILE] [--leader-elect]
                             run the scheduler against any API server
  plainkube sim --kubeconfig FILE --nodes N
                             run simulated nodes against any cluster
  plainkube bench [flags] WORKLOAD...
                             measure a cluster (startup crud list watch churn density pod-startup devcluster…)
  plainkube image build|load|ls|rm ...
                             images in the node's containerd, without Docker or a registry
  plainkube token create|list|delete ...
                             the bootstrap tokens hosts join with
  plainkube etcd-snapshot save|ls|restore ...
                             snapshots of the embedded etcd, and a data directory restored from one
  plainkube cleanup [--data-dir DIR]
                             remove what a crashed node left: rules, bridges, mounts (root)
  plainkube install server|agent [--print] [FLAGS...]
                             run 'plainkube server|agent FLAGS' at boot (a systemd unit)
  plainkube uninstall [--data-dir DIR] [--keep-data]
                             stop and remove the units, what the node left, and the data (root)
  plainkube dev cluster [--servers 1] [--agents N] [--dir D]
                             a cluster of 1+N hosts (network namespaces) on this machine (root);
                             'dev cluster down --dir D' removes it, 'dev cluster load' imports images
  plainkube envtest-assets DIR
                             kube-apiserver, etcd and kubectl for controller-runtime's envtest:
                             KUBEBUILDER_ASSETS=DIR go test ./... runs a suite on plainkube
  plainkube kubectl ...      kubectl, with this host's server's admin kubeconfig by default
  plainkube completion bash|zsh|fish
                             shell completion: source <(plainkube completion bash)
  plainkube version          print the version

Run 'plainkube server -h' for the server's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "server", "agent", "controller-manager", "scheduler", "sim":
		reconcile.SurvivePanics()
	}
	switch os.Args[1] {
	case "server":
		err = runServer(os.Args[2:])
	case "agent":
		err = runAgent(os.Args[2:])
	case "controller-manager":
		err = runControllerManager(os.Args[2:])
	case "scheduler":
		err = runScheduler(os.Args[2:])
	case "image":
		err = runImage(os.Args[2:])
	case "sim":
		err = runSim(os.Args[2:])
	case "bench":
		err = runBench(os.Args[2:])
	case "cleanup":
		err = runCleanup(os.Args[2:])
	case "kubectl":
		runKubectl(os.Args[2:])
	case "envtest-assets":
		err = runEnvtestAssets(os.Args[2:], os.Stdout)
	case "envtest-asset":
		err = runEnvtestAsset(os.Args[2:])
	case "completion":
		err = runCompletion(os.Args[2:], os.Stdout)
	case "install":
		err = runInstall(os.Args[2:], os.Stdout, os.Stderr)
	case "uninstall":
		err = runUninstall(os.Args[2:], os.Stderr)
	case "token":
		err = runToken(os.Args[2:])
	case "etcd-snapshot":
		err = runEtcdSnapshot(os.Args[2:])
	case "dev":
		err = runDev(os.Args[2:])
	case "version", "--version":
		fmt.Println("plainkube", version.GitVersion())
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "plainkube: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "plainkube:", err)
		os.Exit(1)
	}
}

func runServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	// As upstream's kube-apiserver: the ServiceAccount admission plugin is on.
	opts := server.Options{DefaultAdmission: true}
	fs.StringVar(&opts.DataDir, "data-dir", server.DefaultDataDir(), "directory for certificates, etcd data and admin.kubeconfig")
	fs.StringVar(&opts.BindAddress, "bind-address", "0.0.0.0", "address the API server listens on")
	fs.IntVar(&opts.Port, "port", 6443, "HTTPS port of the API server")
	etcdServers := fs.String("etcd-servers", "", "comma-separated URLs of an external etcd cluster (default: embedded etcd under --data-dir)")
	fs.StringVar(&opts.EtcdCAFile, "etcd-cafile", "", "CA file the external etcd members' certificates are checked against")
	fs.StringVar(&opts.EtcdCertFile, "etcd-certfile", "", "client certificate file for the external etcd")
	fs.StringVar(&opts.EtcdKeyFile, "etcd-keyfile", "", "client key file for the external etcd")
	fs.StringVar(&opts.ServiceCIDR, "service-cidr", "10.96.0.0/12", "range of Service cluster IPs")
	fs.DurationVar(&opts.JoinTokenTTL, "token-ttl", server.DefaultJoinTokenTTL, "how long the join token made at the first start lasts (0: it does not expire); `plainkube token create` makes more")
	fs.StringVar(&opts.ServiceAccountIssuer, "service-account-issuer", "https://kubernetes.default.svc.cluster.local", "issuer (iss) of service-account tokens, and the API server's audience")
	fs.Var(listFlag{&opts.PodSecurityExemptions.Namespaces}, "pod-security-exempt-namespaces", "comma-separated namespaces the PodSecurity admission plugin does not check (its configuration's exemptions.namespaces)")
	fs.Var(listFlag{&opts.PodSecurityExemptions.Usernames}, "pod-security-exempt-usernames", "comma-separated users whose requests the PodSecurity admission plugin does not check (exemptions.usernames)")
	fs.Var(listFlag{&opts.PodSecurityExemptions.RuntimeClasses}, "pod-security-exempt-runtime-classes", "comma-separated runtime classes whose pods the PodSecurity admission plugin does not check (exemptions.runtimeClasses)")
	fs.Var(listFlag{&opts.EnableAdmissionPlugins}, "enable-admission-plugins", "comma-separated admission plugins to turn on besides the default ones, by upstream's names "+
		"(of those off by default plainkube has OwnerReferencesPermissionEnforcement and EventRateLimit); the order given does not matter")
	fs.StringVar(&opts.Audit.Path, "audit-log-path", "", "write the audit log (audit.k8s.io/v1 Events, one JSON line each) to this file ('-': standard output); needs --audit-policy-file")
	fs.StringVar(&opts.Audit.PolicyFile, "audit-policy-file", "", "the audit Policy (audit.k8s.io/v1): which requests are logged at which level")
	fs.IntVar(&opts.Audit.MaxAge, "audit-log-maxage", 0, "days to keep rotated audit log files (0: no limit)")
	fs.IntVar(&opts.Audit.MaxBackups, "audit-log-maxbackup", 0, "rotated audit log files to keep (0: no limit)")
	fs.IntVar(&opts.Audit.MaxSize, "audit-log-maxsize", 0, "MiB of an audit log file before it is rotated (0: 100)")
	fs.StringVar(&opts.EncryptionProviderConfig, "encryption-provider-config", "", "an EncryptionConfiguration (apiserver.config.k8s.io/v1: aescbc, aesgcm, secretbox, identity) saying which resources are encrypted in etcd (default: DATA/encryption-config.yaml, made at first start: Secrets, aescbc)")
	fs.StringVar(&opts.AdmissionControlConfigFile, "admission-control-config-file", "", "an AdmissionConfiguration (apiserver.config.k8s.io/v1) giving admission plugins their configuration; plainkube reads EventRateLimit's (eventratelimit.admission.k8s.io/v1alpha1 Configuration)")
	fs.Var(listFlag{&opts.DisableAdmissionPlugins}, "disable-admission-plugins", "comma-separated admission plugins to turn off even if on by default, by upstream's names")
	daemon := addDaemonFlags(fs)
	disableControllers := fs.Bool("disable-controllers", false, "do not run the controller manager in this process")
	controllersFlag := fs.String("controllers", "*", controllermanager.ControllersFlagUsage())
	disableScheduler := fs.Bool("disable-scheduler", false, "do not run the scheduler in this process")
	disableNode := fs.Bool("disable-node", false, "do not run a node agent on this host (by default one runs, with containerd, as root; its API listens on port 10250)")
	fs.Bool("enable-node", true, "deprecated, the default: a node agent runs unless --disable-node is given")
	clusterCIDR := fs.String("cluster-cidr", "10.42.0.0/16", "range of pod IPs; each node gets a /24 of it")
	nodeName := fs.String("node-name", "", "name of this host's Node (default: the host name, lower-cased)")
	nodeIP := fs.String("node-ip", "", "InternalIP this host's node reports (default: the host's first global IPv4 address)")
	fs.StringVar(&opts.ClusterDNS, "cluster-dns", "", "address of the kube-dns Service pods resolve names at (default: the tenth of --service-cidr, 10.96.0.10; none: no cluster DNS)")
	nodeFlags := addNodeFlags(fs)
	nodeGrace := fs.Duration("node-monitor-grace-period", 40*time.Second, "how long a node may miss heartbeats before it is marked unreachable and its pods evicted")
	autoscaling := addAutoscalingFlags(fs)
	simNodes := fs.Int("sim-nodes", 0, "run this many simulated nodes in this process (labelled plainkube.dev/simulated=true)")
	runtimeEndpoint, cniConfDir := runtimeFlags(fs)
	if printed, err := daemon.parse(fs, args); printed || err != nil {
		return err
	}
	if *etcdServers != "" {
		opts.EtcdServers = strings.Split(*etcdServers, ",")
	}
	log, err := daemon.logger()
	if err != nil {
		return err
	}
	slog.SetDefault(log)
	opts.Logger = log
	podRange, err := netip.ParsePrefix(*clusterCIDR)
	if err != nil {
		return fmt.Errorf("--cluster-cidr: %w", err)
	}
	serviceRange, err := netip.ParsePrefix(opts.ServiceCIDR)
	if err != nil {
		return fmt.Errorf("--service-cidr: %w", err)
	}
	if podRange.Overlaps(serviceRange) {
		return fmt.Errorf("--cluster-cidr %s overlaps --service-cidr %s: pods and Services need ranges of their own", podRange, serviceRange)
	}
	clusterDNS, err := server.ClusterDNSAddress(opts.ClusterDNS, serviceRange)
	if err != nil {
		return err
	}
	controllers, err := controllermanager.ParseControllers(*controllersFlag)
	if err != nil {
		return err
	}
	// The in-process controller manager and scheduler keep their Lease
	// identity across restarts: after a crash, the next start leads at
	// once instead of waiting out the Lease of the last.
	leaderID := leaderIdentity(opts.DataDir)
	if !*disableControllers {
		// Ready only while a controller manager leads (the scheduler,
		// which syncs its informers before it campaigns, is left out of
		// /readyz so as not to slow the start down by that).
		opts.LeaderLeases = append(opts.LeaderLeases, "kube-controller-manager")
		opts.Components = append(opts.Components, func(ctx context.Context, env server.ComponentEnv) error {
			return controllermanager.Run(ctx, env.ConfigAs(auth.ControllerManagerUser()), controllermanager.Options{RootCA: env.CAPEM,
				LeaderElection:         &reconcile.LeaderElection{Identity: leaderID},
				NodeMonitorGracePeriod: *nodeGrace, Autoscaling: *autoscaling, ClusterCIDR: podRange, SigningCA: &csrsigning.CA{Cert: env.CACert, Key: env.CAKey},
				KubeletServingCA: &csrsigning.CA{Cert: env.KubeletServingCACert, Key: env.KubeletServingCAKey}, ServiceCIDRs: []netip.Prefix{serviceRange},
				Informers: env.Informers, Controllers: controllers, ServiceAccountConfig: env.ServiceAccountConfig,
				HelmCacheDir: filepath.Join(opts.DataDir, "helm")})
		})
	}
	if !*disableScheduler {
		// As upstream's kube-scheduler (--leader-elect=true): only the
		// holder of kube-system/kube-scheduler schedules, and the Lease is
		// what componentstatuses reports the scheduler's health by.
		opts.Components = append(opts.Components, schedulerComponent(scheduler.Options{Logger: log, LeaderElection: &scheduler.LeaderElection{Identity: leaderID}}))
	}
	// A node that finds another node's pods on its pod bridge stops the
	// server (internal/kubelet/network's BridgeInUseError).
	nodeRefused := make(chan error, 1)
	if !*disableNode {
		if err := nodePreflight(*runtimeEndpoint); err != nil {
			return err
		}
		if err := nodeFlags.preflight(); err != nil {
			return fmt.Errorf("%w (or pass --disable-node for a control plane without a node)", err)
		}
		dataDir := opts.DataDir
		// Static pod manifests: the node runs every Pod file put here.
		manifests := filepath.Join(dataDir, "manifests")
		if err := os.MkdirAll(manifests, 0o755); err != nil {
			return err
		}
		opts.Components = append(opts.Components, func(ctx context.Context, env server.ComponentEnv) (err error) {
			defer func() {
				if inUse := (*podnetwork.BridgeInUseError)(nil); errors.As(err, &inUse) {
					nodeRefused <- err
				}
			}()
			name := *nodeName
			if name == "" {
				var err error
				if name, err = kubelet.DefaultNodeName(); err != nil {
					return err
				}
			}
			// The server's node acts as any node: system:node:<name>. The
			// server, not the node, marks it a control-plane node, as
			// kubeadm does with the admin's credentials.
			return node.Run(ctx, env.ConfigAs(auth.NodeUser(name)), nodeFlags.options(podRange, serviceRange, clusterDNS, kubelet.Options{
				NodeName: name, NodeIP: *nodeIP, DataDir: filepath.Join(dataDir, "node"), Logger: log,
				ControlPlane: true, ControlPlaneConfig: env.ConfigAs(auth.APIServerUser()),
				IssueServingCert: env.IssueServingCert, ClientCA: env.CAPEM, ManifestsDir: manifests,
				RuntimeEndpoint: *runtimeEndpoint, CNIConfDir: *cniConfDir}))
		})
	}
	if *simNodes > 0 {
		opts.Components = append(opts.Components, simComponent(sim.Options{Nodes: *simNodes, Logger: log}))
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv, err := server.Start(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Printf("plainkube %s is serving at %s; use it with: export KUBECONFIG=%s\n", version.GitVersion(), srv.URL, srv.KubeconfigPath)
	switch jt := srv.JoinToken; {
	case jt.New && jt.Expires.IsZero():
		fmt.Printf("join another host (as root) with:\n  %s\n", srv.JoinCommand())
	case jt.New:
		fmt.Printf("join another host (as root) until %s with:\n  %s\n", jt.Expires.Local().Format(time.RFC1123), srv.JoinCommand())
	default:
		fmt.Printf("to join another host, make a join command with: plainkube token create --print-join-command\n")
	}
	select {
	case <-ctx.Done():
	case err = <-nodeRefused:
		// Serving without the node would leave its pods pending with
		// nothing said where the user looks.
		stop()
	}
	log.Info("shutting down", "component", "server")
	srv.Wait()
	return err
}

// addAutoscalingFlags adds upstream's --horizontal-pod-autoscaler-* flags,
// with upstream's defaults.
func addAutoscalingFlags(fs *flag.FlagSet) *controllermanager.AutoscalingOptions {
	a := &controllermanager.AutoscalingOptions{}
	fs.DurationVar(&a.SyncPeriod, "horizontal-pod-autoscaler-sync-period", podautoscaler.DefaultSyncPeriod, "how often each HorizontalPodAutoscaler's metrics are read and its target scaled")
	fs.Float64Var(&a.Tolerance, "horizontal-pod-autoscaler-tolerance", podautoscaler.DefaultSettings.Tolerance, "the smallest ratio of metric to target, away from 1, that scales a target (0: the default)")
	fs.DurationVar(&a.DownscaleStabilization, "horizontal-pod-autoscaler-downscale-stabilization", podautoscaler.DefaultSettings.DownscaleWindow, "how far back the highest recommendation is taken when scaling down")
	return a
}

// runtimeFlags adds --container-runtime-endpoint and --cni-conf-dir.
func runtimeFlags(fs *flag.FlagSet) (endpoint, cniConfDir *string) {
	endpoint = fs.String("container-runtime-endpoint", "", "use the containerd already running at this CRI v1 endpoint (unix:///run/containerd/containerd.sock) instead of starting one: "+
		"plainkube neither starts nor stops it, and imports its pause image into its k8s.io namespace (also under the sandbox image name it is configured with). "+
		"Its configuration is yours: the CRI plugin enabled, the CNI plugins (Debian's containernetworking-plugins: "+containerd.DefaultCNIBinDir+") in its cni bin_dir, "+
		"and its cni conf_dir the folder the agent writes the pod network into (--cni-conf-dir)")
	cniConfDir = fs.String("cni-conf-dir", "", "with --container-runtime-endpoint: where the agent writes the pod network's CNI configuration; it must be that containerd's cni conf_dir (default: the conf_dir it reports, else "+containerd.DefaultCNIConfDir+")")
	return endpoint, cniConfDir
}

// nodePreflight says what is missing for the node agent that 'plainkube
// server' runs by default, and how to go without it.
func nodePreflight(runtimeEndpoint string) error {
	if os.Geteuid() != 0 {
		return errors.New("the node agent needs root (it runs containerd and sets up pod networking); run as root, or pass --disable-node for a control plane without a node")
	}
	if runtimeEndpoint != "" {
		return externalRuntimePreflight(runtimeEndpoint)
	}
	if err := containerd.CheckInstalled(containerd.DefaultCNIBinDir); err != nil {
		return fmt.Errorf("%w (or pass --disable-node for a control plane without a node)", err)
	}
	return nil
}

// externalRuntimePreflight checks a --container-runtime-endpoint: a unix
// socket that exists, and ctr (from Debian's containerd package), with
// which images are imported.
func externalRuntimePreflight(endpoint string) error {
	sock, err := containerd.SocketPath(endpoint)
	if err != nil {
		return err
	}
	if _, err := os.Stat(sock); err != nil {
		return fmt.Errorf("--container-runtime-endpoint: %w", err)
	}
	if _, err := exec.LookPath("ctr"); err != nil {
		return errors.New("the node agent imports images with ctr; install it with: apt-get install -y containerd")
	}
	return nil
}

// imageSocket is the containerd socket the image commands use: the
// endpoint's, else the one plainkube starts under dataDir.
func imageSocket(endpoint, dataDir, sub string) (string, error) {
	if endpoint != "" {
		return containerd.SocketPath(endpoint)
	}
	return containerd.Socket(filepath.Join(dataDir, sub, "containerd")), nil
}

func runControllerManager(args []string) error {
	fs := flag.NewFlagSet("controller-manager", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server to manage")
	leaderElect := fs.Bool("leader-elect", true, "act only while holding the kube-system/kube-controller-manager Lease")
	signingCert := fs.String("cluster-signing-cert-file", "", "PEM CA certificate that signs approved certificate signing requests (with --cluster-signing-key-file)")
	signingKey := fs.String("cluster-signing-key-file", "", "PEM private key of --cluster-signing-cert-file")
	servingCert := fs.String("cluster-signing-kubelet-serving-cert-file", "", "PEM CA certificate that signs approved kubernetes.io/kubelet-serving requests (with --cluster-signing-kubelet-serving-key-file): a CA of its own, which only the API server trusts for node agents (plainkube server's DATA/pki/kubelet-serving-ca.crt); without it those requests are not signed")
	servingKey := fs.String("cluster-signing-kubelet-serving-key-file", "", "PEM private key of --cluster-signing-kubelet-serving-cert-file")
	serviceCIDR := fs.String("service-cluster-ip-range", "10.96.0.0/12", "the cluster's Service range: nodes' serving certificates may not name its addresses")
	controllersFlag := fs.String("controllers", "*", controllermanager.ControllersFlagUsage())
	autoscaling := addAutoscalingFlags(fs)
	fs.Parse(args)
	controllers, err := controllermanager.ParseControllers(*controllersFlag)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	o := controllermanager.Options{RootCA: rootCA(cfg), Controllers: controllers, Autoscaling: *autoscaling}
	if *leaderElect {
		o.LeaderElection = &reconcile.LeaderElection{}
	}
	if (*signingCert == "") != (*signingKey == "") {
		return errors.New("--cluster-signing-cert-file and --cluster-signing-key-file go together")
	}
	if (*servingCert == "") != (*servingKey == "") {
		return errors.New("--cluster-signing-kubelet-serving-cert-file and --cluster-signing-kubelet-serving-key-file go together")
	}
	if o.SigningCA, err = readSigningCA(*signingCert, *signingKey); err != nil {
		return err
	}
	if o.KubeletServingCA, err = readSigningCA(*servingCert, *servingKey); err != nil {
		return err
	}
	for _, r := range strings.Split(*serviceCIDR, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(r))
		if err != nil {
			return fmt.Errorf("--service-cluster-ip-range: %w", err)
		}
		o.ServiceCIDRs = append(o.ServiceCIDRs, p)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return controllermanager.Run(ctx, cfg, o)
}

// readSigningCA reads a CA's certificate and key files (none given: nil).
func readSigningCA(certFile, keyFile string) (*csrsigning.CA, error) {
	if certFile == "" {
		return nil, nil
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	cert, key, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certFile, err)
	}
	return &csrsigning.CA{Cert: cert, Key: key}, nil
}

// runAgent joins this host to a cluster: TLS bootstrap with the token,
// then the node agent on containerd as system:node:<name>.
func runAgent(args []string) error {
	fs := flag.NewFlagSet("agent", flag.ExitOnError)
	serverURL := fs.String("server", "", "URL of the API server (https://host:port), as in the server's join command")
	token := fs.String("token", "", "bootstrap token printed by the server (also in its DATA/join-token); not needed once the node has its certificate")
	caHash := fs.String("ca-cert-hash", "", "sha256:<hex> pin of the cluster CA's public key, as in the server's join command")
	caFile := fs.String("ca-file", "", "PEM file of the cluster CA (instead of --ca-cert-hash)")
	dataDir := fs.String("data-dir", filepath.Join(server.DefaultDataDir(), "agent"), "directory for the node's credentials (pki/), static pod manifests (manifests/) and containerd, pods and logs (node/)")
	nodeName := fs.String("node-name", "", "name of the Node (default: the host name, lower-cased)")
	nodeIP := fs.String("node-ip", "", "InternalIP the node reports (default: the host's first global IPv4 address)")
	port := fs.Int("port", 10250, "port of the node agent's HTTPS API (container logs for the API server)")
	daemon := addDaemonFlags(fs)
	runtimeEndpoint, cniConfDir := runtimeFlags(fs)
	serviceCIDR := fs.String("service-cidr", "10.96.0.0/12", "the cluster's Service range, as the server's --service-cidr (its unallocated addresses are rejected on this node)")
	clusterCIDR := fs.String("cluster-cidr", "10.42.0.0/16", "the cluster's pod range, as the server's --cluster-cidr (pod traffic to addresses outside it and the Service range is masqueraded)")
	clusterDNS := fs.String("cluster-dns", "", "address pods resolve names at (default: the kube-system/kube-dns Service's)")
	nodeFlags := addNodeFlags(fs)
	if printed, err := daemon.parse(fs, args); printed || err != nil {
		return err
	}
	serviceRange, err := netip.ParsePrefix(*serviceCIDR)
	if err != nil {
		return fmt.Errorf("--service-cidr: %w", err)
	}
	podRange, err := netip.ParsePrefix(*clusterCIDR)
	if err != nil {
		return fmt.Errorf("--cluster-cidr: %w", err)
	}
	if *serverURL == "" {
		return errors.New("agent: --server is required")
	}
	if os.Geteuid() != 0 {
		return errors.New("the node agent needs root (it runs containerd and sets up pod networking)")
	}
	if *runtimeEndpoint != "" {
		if err := externalRuntimePreflight(*runtimeEndpoint); err != nil {
			return err
		}
	} else if err := containerd.CheckInstalled(containerd.DefaultCNIBinDir); err != nil {
		return err
	}
	if err := nodeFlags.preflight(); err != nil {
		return err
	}
	log, err := daemon.logger()
	if err != nil {
		return err
	}
	slog.SetDefault(log)
	if *nodeName == "" {
		if *nodeName, err = kubelet.DefaultNodeName(); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// The agent's own credentials are the kubelet's business, as upstream's.
	kubeletLog := log.With("component", "kubelet")
	creds, err := tlsbootstrap.Bootstrap(ctx, tlsbootstrap.Options{Server: *serverURL, Token: *token, CACertHash: *caHash, CAFile: *caFile,
		DataDir: *dataDir, NodeName: *nodeName, Logger: kubeletLog})
	if err != nil {
		return err
	}
	// Static pod manifests: the node runs every Pod file put here.
	manifests := filepath.Join(*dataDir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return err
	}
	o := nodeFlags.options(podRange, serviceRange, *clusterDNS, kubelet.Options{
		DataDir: filepath.Join(*dataDir, "node"), NodeName: *nodeName, NodeIP: *nodeIP,
		APIPort: *port, ClientCA: creds.CAPEM, Logger: log, ManifestsDir: manifests,
		RuntimeEndpoint: *runtimeEndpoint, CNIConfDir: *cniConfDir,
		IssueServingCert: tlsbootstrap.ServingIssuer(creds.Config, creds.CAPEM, *dataDir, *nodeName, kubeletLog)})
	o.OwnProcess = true
	go tlsbootstrap.RotateClient(ctx, creds, *nodeName, nil, kubeletLog)
	fmt.Printf("plainkube agent %s: node %q joined %s\n", version.GitVersion(), *nodeName, *serverURL)
	return node.Run(ctx, creds.Config, o)
}

// rootCA is the CA a kubeconfig trusts, for the kube-root-ca.crt ConfigMaps.
func rootCA(cfg *rest.Config) []byte {
	if len(cfg.CAData) > 0 {
		return cfg.CAData
	}
	if cfg.CAFile != "" {
		b, _ := os.ReadFile(cfg.CAFile)
		return b
	}
	return nil
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to measure (not needed for startup alone)")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	serverCmd := fs.String("server-command", "", "startup: command line that launches a server, with {dataDir}, {port}, {etcdPort} and {etcdPeerPort} placeholders; a line with shell syntax runs under /bin/sh -c (default: this binary's server)")
	serverPIDs := fs.String("server-pid", "", "comma-separated process ids of the server under test: each workload reports their resident memory (with descendants)")
	o := bench.Options{Progress: os.Stderr}
	fs.IntVar(&o.Repeat, "repeat", 3, "startup, devcluster: runs")
	fs.DurationVar(&o.NodeWait, "node-wait", 10*time.Second, "startup: how long to wait for a first Ready node after /readyz")
	concurrency := fs.String("concurrency", "1,16,64", "crud, dns: comma-separated concurrency levels")
	kinds := fs.String("kinds", "configmaps,pods", "crud: comma-separated kinds to cycle through (configmaps, pods, secrets)")
	fs.DurationVar(&o.Duration, "duration", 0, "crud, dns: time per level (default 5s); churn: total time (default 20s)")
	fs.IntVar(&o.ListPods, "list-pods", 10000, "list: pods to create")
	fs.IntVar(&o.Watchers, "watchers", 1000, "watch: concurrent watchers")
	fs.IntVar(&o.Events, "events", 100, "watch: events written")
	fs.IntVar(&o.Replicas, "replicas", 10000, "density: deployment replicas")
	fs.IntVar(&o.Pods, "pods", 20, "pod-startup: pods")
	fs.IntVar(&o.Claims, "claims", 1000, "pvc: claims (and pods using them)")
	fs.IntVar(&o.Agents, "agents", 2, "devcluster: agents beside the server")
	fs.StringVar(&o.PodNetwork, "pod-network", "", "podnet: the backend to measure, host-gw or vxlan (default: both)")
	fs.StringVar(&o.PodImage, "image", "busybox:1.36", "pod-startup: image present on the nodes")
	fs.IntVar(&o.Services, "services", 1000, "netprog: Services of 10 endpoints each")
	fs.IntVar(&o.Changes, "changes", 100, "netprog: EndpointSlice changes timed, one at a time")
	fs.StringVar(&o.DNSServer, "dns-server", "", "dns: ip:port of the DNS server to ask (default: the first real node's answerer)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "Usage: plainkube bench [flags] WORKLOAD...\n\nWorkloads:")
		for _, w := range bench.Workloads {
			fmt.Fprintf(os.Stderr, "  %-12s %s\n", w.Name, w.Help)
		}
		fmt.Fprintln(os.Stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	names := fs.Args()
	if len(names) == 0 {
		names = []string{"startup", "crud", "list", "watch", "churn"}
	}
	for _, c := range strings.Split(*concurrency, ",") {
		var n int
		if _, err := fmt.Sscan(c, &n); err != nil || n <= 0 {
			return fmt.Errorf("--concurrency: bad level %q", c)
		}
		o.Concurrency = append(o.Concurrency, n)
	}
	for _, k := range strings.Split(*kinds, ",") {
		if k != "configmaps" && k != "pods" && k != "secrets" {
			return fmt.Errorf("--kinds: unknown kind %q (configmaps, pods, secrets)", k)
		}
		o.CRUDKinds = append(o.CRUDKinds, k)
	}
	o.ServerCommand = *serverCmd
	for _, p := range strings.Split(*serverPIDs, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 0 {
			return fmt.Errorf("--server-pid: bad process id %q", p)
		}
		o.ServerPIDs = append(o.ServerPIDs, pid)
	}
	if *kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err != nil {
			return err
		}
		o.Config = cfg
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	rep, err := bench.Run(ctx, names, &o)
	if err != nil {
		return err
	}
	rep.WriteTable(os.Stdout)
	if *jsonOut != "" {
		return rep.WriteJSON(*jsonOut)
	}
	return nil
}

// simComponent runs simulated nodes inside the server process.
func simComponent(o sim.Options) server.Component {
	return func(ctx context.Context, env server.ComponentEnv) error {
		// Simulated nodes, a test device, share one admin client.
		s, err := sim.New(env.AdminConfig, o)
		if err != nil {
			return err
		}
		return s.Run(ctx)
	}
}

func runSim(args []string) error {
	fs := flag.NewFlagSet("sim", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to join")
	o := sim.Options{}
	fs.IntVar(&o.Nodes, "nodes", 1, "number of simulated nodes")
	fs.StringVar(&o.NamePrefix, "name-prefix", "sim-", "node name prefix")
	fs.Parse(args)
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return simComponent(o)(ctx, server.ComponentEnv{AdminConfig: cfg})
}

// schedulerComponent runs the scheduler inside the server process, as
// system:kube-scheduler.
// leaderIdentity is the Lease identity of a server's in-process
// components: the host's name and a hash of the data dir, the same at
// every start of this server and different for two servers on one host.
func leaderIdentity(dataDir string) string {
	host, _ := os.Hostname()
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	sum := sha256.Sum256([]byte(dataDir))
	return host + "_" + hex.EncodeToString(sum[:6])
}

func schedulerComponent(o scheduler.Options) server.Component {
	return func(ctx context.Context, env server.ComponentEnv) error {
		o.Informers = env.Informers // pods held once, with the controllers
		o.Metrics = env.Metrics
		return runSchedulerWith(ctx, env.ConfigAs(auth.SchedulerUser()), o)
	}
}

func runSchedulerWith(ctx context.Context, cfg *rest.Config, o scheduler.Options) error {
	s, err := scheduler.New(cfg, o)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

func runScheduler(args []string) error {
	fs := flag.NewFlagSet("scheduler", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server")
	configFile := fs.String("config", "", "scheduler configuration file (YAML: profiles, plugins, weights)")
	leaderElect := fs.Bool("leader-elect", false, "take a Lease in kube-system so only one of several schedulers acts")
	fs.Parse(args)
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	o := scheduler.Options{}
	if *configFile != "" {
		c, err := schedconfig.Load(*configFile)
		if err != nil {
			return err
		}
		o.Config = c
	}
	if *leaderElect {
		o.LeaderElection = &scheduler.LeaderElection{}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return runSchedulerWith(ctx, cfg, o)
}

// runImage manages images in the containerd of the node agent that
// 'plainkube server --enable-node' runs.
func runImage(args []string) error {
	const usage = `usage:
  plainkube image build --tag NAME (--dir DIR [--cmd "ARGS"] [--user U] | --binary FILE [--links a,b]) [--entrypoint "CMD ARGS"] [--data-dir D | --container-runtime-endpoint E]
  plainkube image load FILE.tar [--data-dir D | --container-runtime-endpoint E]
  plainkube image ls [--data-dir D | --container-runtime-endpoint E]
  plainkube image rm NAME... [--data-dir D | --container-runtime-endpoint E]`
	if len(args) == 0 {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("image "+args[0], flag.ExitOnError)
	dataDir := fs.String("data-dir", server.DefaultDataDir(), "the server's data directory")
	tag := fs.String("tag", "", "build: the image name")
	dir := fs.String("dir", "", "build: a folder to use as the image's file system")
	binary := fs.String("binary", "", "build: one static binary to run as the image's entrypoint")
	entrypoint := fs.String("entrypoint", "", "build: the entrypoint command (space-separated)")
	cmd := fs.String("cmd", "", "build --dir: the image's default arguments (its CMD, space-separated), used when a container gives none")
	user := fs.String("user", "", "build --dir: the user the image runs as (its USER: a name or uid[:gid])")
	links := fs.String("links", "", "build --binary: comma-separated names to link to the binary in /bin (for busybox: sh,echo,sleep)")
	endpoint := fs.String("container-runtime-endpoint", "", "the containerd to use (unix:///run/containerd/containerd.sock), as given to the server or agent (default: the one plainkube starts under --data-dir)")
	fs.Parse(args[1:])
	socket, err := imageSocket(*endpoint, *dataDir, "node")
	if err != nil {
		return err
	}
	ctx := context.Background()
	switch args[0] {
	case "build":
		if *tag == "" || (*dir == "") == (*binary == "") || ((*cmd != "" || *user != "") && *binary != "") {
			return errors.New(usage)
		}
		source := *dir
		if *binary != "" {
			source = *binary
		}
		fmt.Fprintf(os.Stderr, "building %s from %s into %s…\n", image.Normalize(*tag), source, socket)
		var img v1.Image
		var err error
		if *binary != "" {
			var paths []string
			for _, l := range strings.Split(*links, ",") {
				if l = strings.TrimSpace(l); l != "" {
					paths = append(paths, "/bin/"+l)
				}
			}
			img, err = image.FromBinary(*binary, "/bin/"+filepath.Base(*binary), paths...)
		} else {
			img, err = image.FromDir(*dir, image.Config{Entrypoint: strings.Fields(*entrypoint), Cmd: strings.Fields(*cmd), User: *user})
		}
		if err != nil {
			return err
		}
		if err := image.Load(ctx, socket, img, *tag); err != nil {
			return err
		}
		fmt.Println("built", image.Normalize(*tag))
	case "load":
		for _, f := range fs.Args() {
			fmt.Fprintf(os.Stderr, "loading %s into %s…\n", f, socket)
			if err := image.Import(ctx, socket, f); err != nil {
				return err
			}
			fmt.Println("loaded", f)
		}
	case "ls":
		refs, err := image.List(ctx, socket)
		if err != nil {
			return err
		}
		for _, r := range refs {
			fmt.Println(r)
		}
	case "rm":
		return image.Remove(ctx, socket, fs.Args()...)
	default:
		return errors.New(usage)
	}
	return nil
}

// nodeFlags are the flags of what runs beside the node agent: the pod
// network, the service proxy and the node's DNS answerer.
type nodeFlags struct {
	clusterDomain, dnsUpstreams, proxyTable, podNetwork, netpolTable *string
	dnsPort                                                          *int
	disableProxy, disableDNS, disableNetworkPolicy                   *bool
}

func addNodeFlags(fs *flag.FlagSet) *nodeFlags {
	return &nodeFlags{
		clusterDomain: fs.String("cluster-domain", "cluster.local", "the cluster's DNS domain"),
		dnsUpstreams:  fs.String("dns-upstream", "", "comma-separated ip:port resolvers the node's DNS forwards other names to (default: the host's, from /etc/resolv.conf)"),
		dnsPort:       fs.Int("dns-port", 53, "port of the node's DNS answerer, at the node's address"),
		proxyTable:    fs.String("proxy-table", "plainkube", "name of the service proxy's nftables table (ip and ip6 families)"),
		disableProxy:  fs.Bool("disable-proxy", false, "run no service proxy on this node"),
		disableDNS:    fs.Bool("disable-dns", false, "run no DNS answerer on this node"),
		podNetwork: fs.String("pod-network", string(network.HostGW), "how pods reach other nodes' pods: host-gw (routes through the nodes' addresses; the nodes share a link) "+
			"or vxlan (VXLAN over UDP 8472 between the nodes' addresses; pods' MTU 50 bytes less); every node of a cluster uses the same"),
		netpolTable:          fs.String("network-policy-table", netpol.DefaultTable, "name of the NetworkPolicy enforcer's nftables table (ip and ip6 families)"),
		disableNetworkPolicy: fs.Bool("disable-network-policy", false, "enforce no NetworkPolicies on this node"),
	}
}

// preflight says what the flags get wrong, or what the service proxy, the
// pod network and the NetworkPolicy enforcer need that the host lacks.
func (f *nodeFlags) preflight() error {
	if _, err := network.ParseBackend(*f.podNetwork); err != nil {
		return fmt.Errorf("--pod-network: %w", err)
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return errors.New("the service proxy, the pod network's masquerading and the NetworkPolicy enforcer program nftables with nft; install it with: apt-get install -y nftables")
	}
	return nil
}

// options are the node's options from the flags, around the agent's
// (whose ClusterDNS and ClusterDomain they set).
func (f *nodeFlags) options(clusterCIDR, serviceCIDR netip.Prefix, clusterDNS string, agent kubelet.Options) node.Options {
	backend, _ := network.ParseBackend(*f.podNetwork) // checked by preflight
	o := node.Options{Agent: agent, ServiceCIDRs: []netip.Prefix{serviceCIDR}, DisableProxy: *f.disableProxy, DisableDNS: *f.disableDNS,
		DNSPort: *f.dnsPort, ProxyTable: *f.proxyTable, PodNetwork: backend, ClusterCIDRs: []netip.Prefix{clusterCIDR},
		DisableNetworkPolicy: *f.disableNetworkPolicy, NetworkPolicyTable: *f.netpolTable}
	o.Agent.ClusterDomain = *f.clusterDomain
	if clusterDNS != "" && !*f.disableDNS {
		o.Agent.ClusterDNS = []string{clusterDNS}
	}
	for _, u := range strings.Split(*f.dnsUpstreams, ",") {
		if u = strings.TrimSpace(u); u != "" {
			o.DNSUpstreams = append(o.DNSUpstreams, u)
		}
	}
	return o
}

// runCleanup removes what a node that crashed left on this host.
func runCleanup(args []string) error {
	fs := flag.NewFlagSet("cleanup", flag.ExitOnError)
	dataDir := fs.String("data-dir", server.DefaultDataDir(), "the server's data directory (its node's files are in node/), or a joined agent's (--data-dir of plainkube agent)")
	table := fs.String("proxy-table", "plainkube", "the service proxy's nftables table")
	netpolTable := fs.String("network-policy-table", netpol.DefaultTable, "the NetworkPolicy enforcer's nftables table")
	fs.Parse(args)
	if os.Geteuid() != 0 {
		return errors.New("cleanup needs root")
	}
	return node.Cleanup(context.Background(), filepath.Join(*dataDir, "node"), *table, *netpolTable, func(s string) { fmt.Println(s) })
}

// listFlag is a comma-separated list flag.
type listFlag struct{ list *[]string }

func (f listFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f listFlag) Set(v string) error {
	*f.list = nil
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*f.list = append(*f.list, item)
		}
	}
	return nil
}
