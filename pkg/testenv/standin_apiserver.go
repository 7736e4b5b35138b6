package testenv

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"plainkube.dev/plainkube/internal/controllermanager"
	"plainkube.dev/plainkube/internal/server"
)

// defaultEnvtestControllers is EnvControllers' default.
const defaultEnvtestControllers = "garbagecollector,namespace"

// apiserverFlags are the kube-apiserver flags the stand-in reads.
type apiserverFlags struct {
	etcdServers                   []string
	certDir                       string
	securePort                    int
	bindAddress, advertiseAddress string
	tlsCertFile, tlsKeyFile       string
	clientCAFile                  string
	serviceAccountIssuers         []string
	serviceAccountSigningKeyFile  string
	serviceClusterIPRange         string
	authorizationModes            []string
	enablePlugins, disablePlugins []string
	admissionControlConfigFile    string
	encryptionProviderConfig      string
	auditLogPath, auditPolicyFile string
	// ignored are the flags accepted and not acted on, by name.
	ignored   map[string]*string
	verbosity int
}

// apiserverFlagSet defines kube-apiserver's flags that envtest passes and
// suites commonly add. Those plainkube has no use for are accepted and
// said to be ignored.
func apiserverFlagSet(f *apiserverFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.StringSliceVar(&f.etcdServers, "etcd-servers", nil, "etcd URLs; the etcd stand-in's means: keep objects in memory")
	fs.StringVar(&f.certDir, "cert-dir", "/var/run/kubernetes", "directory of apiserver.crt/apiserver.key (used when --tls-cert-file is not given) and of plainkube's own files")
	fs.IntVar(&f.securePort, "secure-port", 6443, "HTTPS port")
	fs.StringVar(&f.bindAddress, "bind-address", "0.0.0.0", "address to serve on")
	fs.StringVar(&f.advertiseAddress, "advertise-address", "", "address of the kubernetes Service's endpoints")
	fs.StringVar(&f.tlsCertFile, "tls-cert-file", "", "serving certificate (PEM)")
	fs.StringVar(&f.tlsKeyFile, "tls-private-key-file", "", "serving key (PEM)")
	fs.StringVar(&f.clientCAFile, "client-ca-file", "", "CAs whose client certificates authenticate (CN user, O groups)")
	fs.StringSliceVar(&f.serviceAccountIssuers, "service-account-issuer", nil, "service-account token issuer (the first one)")
	fs.StringSlice("service-account-key-file", nil, "accepted; tokens are checked with the signing key's public half")
	fs.StringVar(&f.serviceAccountSigningKeyFile, "service-account-signing-key-file", "", "private key that signs service-account tokens")
	fs.StringVar(&f.serviceClusterIPRange, "service-cluster-ip-range", "10.0.0.0/24", "Service ClusterIP range")
	fs.StringSliceVar(&f.authorizationModes, "authorization-mode", []string{"AlwaysAllow"}, "RBAC, Node (the Node,RBAC chain) or AlwaysAllow")
	fs.StringSliceVar(&f.enablePlugins, "enable-admission-plugins", nil, "admission plugins to turn on")
	fs.StringSliceVar(&f.disablePlugins, "disable-admission-plugins", nil, "admission plugins to turn off")
	fs.StringVar(&f.admissionControlConfigFile, "admission-control-config-file", "", "AdmissionConfiguration file")
	fs.StringVar(&f.encryptionProviderConfig, "encryption-provider-config", "", "EncryptionConfiguration file")
	fs.StringVar(&f.auditLogPath, "audit-log-path", "", "audit log file")
	fs.StringVar(&f.auditPolicyFile, "audit-policy-file", "", "audit policy file")
	fs.Bool("allow-privileged", false, "accepted (plainkube admits privileged containers unless PodSecurity says otherwise)")
	fs.IntVarP(&f.verbosity, "v", "v", 0, "log verbosity (4 and up: debug)")
	f.ignored = map[string]*string{}
	for _, name := range []string{"etcd-prefix", "storage-backend", "runtime-config", "feature-gates", "storage-media-type", "service-node-port-range", "token-auth-file", "requestheader-client-ca-file",
		"proxy-client-cert-file", "proxy-client-key-file", "kubelet-client-certificate", "kubelet-client-key", "profiling", "endpoint-reconciler-type",
		"api-audiences", "service-account-lookup", "watch-cache", "default-watch-cache-size", "max-requests-inflight", "max-mutating-requests-inflight",
		"enable-priority-and-fairness", "delete-collection-workers", "event-ttl", "anonymous-auth", "enable-aggregator-routing"} {
		f.ignored[name] = fs.String(name, "", "accepted, ignored")
	}
	fs.BoolP("help", "h", false, "print the flags")
	return fs
}

// RunKubeAPIServer is the kube-apiserver stand-in: it reads the flags
// controller-runtime's envtest passes (and others kube-apiserver has, the
// ones it cannot honour said to be ignored on stderr), serves plainkube's
// API server as they say — envtest's serving certificate, its client CA
// (so its admin and AddUser certificates authenticate), its service-account
// key, RBAC — with the controllers EnvControllers names and EnvSimNodes
// simulated nodes, until SIGTERM or SIGINT.
func RunKubeAPIServer(args []string, stdout, stderr io.Writer) error {
	var f apiserverFlags
	fs := apiserverFlagSet(&f)
	if done, err := parseStandinFlags("kube-apiserver", fs, args, stdout, stderr); done {
		return err
	}
	log, err := standinLogger(stderr, f.verbosity)
	if err != nil {
		return err
	}
	slog.SetDefault(log) // the controllers' logs
	for _, name := range unknownFlags(fs, args) {
		log.Warn("kube-apiserver flag not known to plainkube's stand-in; ignored", "flag", name)
	}
	for name, v := range f.ignored {
		if *v != "" {
			log.Info("kube-apiserver flag accepted and ignored", "flag", name)
		}
	}
	opts, err := f.options(log)
	if err != nil {
		return err
	}
	dataDir := filepath.Join(f.certDir, "plainkube")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	_, stop, err := start(dataDir, opts)
	if err != nil {
		return err
	}
	log.Info("serving", "address", fmt.Sprintf("https://%s:%d", f.bindAddress, f.securePort))
	<-ctx.Done()
	stop()
	return nil
}

// options turns the flags and environment into Start's options.
func (f *apiserverFlags) options(log *slog.Logger) ([]Option, error) {
	memory, err := etcdIsStandin(f.etcdServers)
	if err != nil {
		return nil, err
	}
	controllers, scheduler, err := envtestControllers(os.Getenv(EnvControllers))
	if err != nil {
		return nil, err
	}
	simNodes := 0
	if v := os.Getenv(EnvSimNodes); v != "" {
		if simNodes, err = strconv.Atoi(v); err != nil || simNodes < 0 {
			return nil, fmt.Errorf("%s=%q: not a number of nodes", EnvSimNodes, v)
		}
	}
	alwaysAllow := false
	for _, m := range f.authorizationModes {
		switch m {
		case "RBAC", "Node":
		case "AlwaysAllow":
			alwaysAllow = len(f.authorizationModes) == 1
		default:
			return nil, fmt.Errorf("--authorization-mode %q: plainkube's stand-in serves RBAC, Node and AlwaysAllow", m)
		}
	}
	certFile, keyFile := f.tlsCertFile, f.tlsKeyFile
	if certFile == "" && keyFile == "" {
		// As kube-apiserver: the pair in --cert-dir, where envtest writes
		// it (else plainkube's own CA issues one).
		c, k := filepath.Join(f.certDir, "apiserver.crt"), filepath.Join(f.certDir, "apiserver.key")
		if _, err := os.Stat(c); err == nil {
			certFile, keyFile = c, k
		}
	}
	issuer := ""
	if len(f.serviceAccountIssuers) > 0 {
		issuer = f.serviceAccountIssuers[0]
	}
	// Upstream's default plugins that plainkube's server leaves off unless
	// asked go on, less those --disable-admission-plugins names, as
	// kube-apiserver would have them.
	enable := append([]string(nil), f.enablePlugins...)
	for _, p := range server.ControllerDefaultPlugins {
		if !slices.Contains(f.disablePlugins, p) && !slices.Contains(enable, p) {
			enable = append(enable, p)
		}
	}
	var opts []Option
	if controllers != nil {
		opts = append(opts, WithControllers(controllers...))
	}
	if scheduler || simNodes > 0 {
		opts = append(opts, WithScheduler())
	}
	if simNodes > 0 {
		opts = append(opts, WithSimNodes(simNodes))
	}
	opts = append(opts, WithLogger(log), func(o *options) {
		o.server = append(o.server, func(s *server.Options) {
			s.BindAddress, s.Port = f.bindAddress, f.securePort
			s.InMemory = memory
			if !memory {
				s.EtcdServers = f.etcdServers
			}
			s.ServingCertFile, s.ServingKeyFile = certFile, keyFile
			s.ClientCAFile = f.clientCAFile
			s.ServiceAccountSigningKeyFile = f.serviceAccountSigningKeyFile
			s.ServiceAccountIssuer = issuer
			s.ServiceCIDR = f.serviceClusterIPRange
			s.ClusterDNS = "none"
			s.AuthorizeAll = alwaysAllow
			s.DefaultAdmission = false
			s.EnableAdmissionPlugins, s.DisableAdmissionPlugins = enable, f.disablePlugins
			s.AdmissionControlConfigFile = f.admissionControlConfigFile
			s.EncryptionProviderConfig = f.encryptionProviderConfig
			s.Audit.Path, s.Audit.PolicyFile = f.auditLogPath, f.auditPolicyFile
		})
	})
	return opts, nil
}

// envtestControllers reads EnvControllers: the controller manager's list
// (nil: no controller manager) and whether the scheduler runs.
func envtestControllers(v string) (controllers []string, scheduler bool, err error) {
	v = strings.TrimSpace(v)
	if v == "" {
		v = defaultEnvtestControllers
	}
	if v == "none" {
		return nil, false, nil
	}
	for _, item := range strings.Split(v, ",") {
		switch item = strings.TrimSpace(item); item {
		case "":
		case "scheduler":
			scheduler = true
		case "gc", "-gc":
			controllers = append(controllers, strings.Replace(item, "gc", "garbagecollector", 1))
		default:
			controllers = append(controllers, item)
		}
	}
	if err := controllermanager.ValidateControllers(controllers); err != nil {
		return nil, false, fmt.Errorf("%s: %w", EnvControllers, err)
	}
	if len(controllers) == 0 {
		controllers = nil
	}
	return controllers, scheduler, nil
}

// etcdIsStandin asks the first etcd server whether it is plainkube's etcd
// stand-in (then objects are kept in memory); a real etcd is stored in.
func etcdIsStandin(servers []string) (bool, error) {
	if len(servers) == 0 {
		return true, nil
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(strings.TrimSuffix(servers[0], "/") + "/health")
	if err != nil {
		if strings.HasPrefix(servers[0], "https://") {
			return false, nil // a real etcd with TLS: server.Start dials it
		}
		return false, fmt.Errorf("--etcd-servers %s: %w", servers[0], err)
	}
	resp.Body.Close()
	return resp.Header.Get(standinHeader) != "", nil
}

// unknownFlags are the --names in args that fs does not define.
func unknownFlags(fs *pflag.FlagSet, args []string) []string {
	var out []string
	for _, a := range args {
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if fs.Lookup(name) == nil {
			out = append(out, name)
		}
	}
	return out
}

// standinLogger logs to w at EnvLogLevel (or debug from -v=4).
func standinLogger(w io.Writer, verbosity int) (*slog.Logger, error) {
	level := slog.LevelWarn
	if v := os.Getenv(EnvLogLevel); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			return nil, fmt.Errorf("%s=%q: %w", EnvLogLevel, v, err)
		}
	} else if verbosity >= 4 {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}
