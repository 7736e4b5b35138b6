package kubelet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/image"
	"plainkube.dev/plainkube/internal/image/pause"
	"plainkube.dev/plainkube/internal/kubelet/containerd"
	"plainkube.dev/plainkube/internal/kubelet/events"
	"plainkube.dev/plainkube/internal/kubelet/localpath"
	"plainkube.dev/plainkube/internal/kubelet/network"
	"plainkube.dev/plainkube/internal/kubelet/podstatus"
	"plainkube.dev/plainkube/internal/kubelet/probes"
	"plainkube.dev/plainkube/internal/kubelet/runtime"
	kubeletserver "plainkube.dev/plainkube/internal/kubelet/server"
	"plainkube.dev/plainkube/internal/kubelet/static"
	"plainkube.dev/plainkube/internal/kubelet/volumes"
	"plainkube.dev/plainkube/internal/reconcile"
	"plainkube.dev/plainkube/internal/resolvconf"
)

// Agent is the node agent of one node whose pods run in containerd.
type Agent struct {
	opts Options
	cs   kubernetes.Interface
	// controlPlaneCS marks a control-plane node (Options.ControlPlaneConfig).
	controlPlaneCS kubernetes.Interface
	log            *slog.Logger
	rt             *containerd.Process
	cri            *runtime.Runtime // rt's CRI services, as the agent uses them
	host           host
	nodeUID        types.UID
	net            *network.PodNetwork
	probes         *probes.Runner
	pods           listersv1.PodLister
	// services feed the containers' service environment variables.
	services listersv1.ServiceLister
	// events records events (nil until Run starts it).
	events  *events.Recorder
	hostDNS network.ResolvConf // the node's resolver configuration
	vols    *volumes.Manager
	// apiSynced is set once the node is registered and the pod informer
	// has synced; until then only static pods are synced.
	apiSynced atomic.Bool
	static    *static.Pods // nil without Options.ManifestsDir
	usage     usageState
	metrics   *kubeletserver.Metrics
	// admitted are the pods admitted to run here (admit.go).
	admitted admissions
	// resize has the pods' allocated resources and what their containers
	// run with (resize.go).
	resize resizeState
}

// New makes an agent that talks to the API server at cfg. Nothing starts
// until Run.
func New(cfg *rest.Config, opts Options) (*Agent, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "plainkube-kubelet/" + opts.NodeName
	}
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		// Upstream kubelet's kubeAPIQPS and kubeAPIBurst defaults, not
		// client-go's 5 and 10: a pod with 50 ConfigMap volumes is 50
		// reads before it starts.
		cfg.QPS, cfg.Burst = 50, 100
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	a := &Agent{opts: opts, cs: cs, controlPlaneCS: cs, log: opts.Logger.With("component", "kubelet", "node", opts.NodeName)}
	if opts.ControlPlaneConfig != nil {
		if a.controlPlaneCS, err = kubernetes.NewForConfig(opts.ControlPlaneConfig); err != nil {
			return nil, err
		}
	}
	a.metrics = kubeletserver.NewMetrics(opts.NodeName, a.runningPods)
	return a, nil
}

// NodeName is the name of the agent's Node.
func (a *Agent) NodeName() string { return a.opts.NodeName }

// MetricsRegisterer is where other components of the node add metrics
// that the agent's /metrics serves.
func (a *Agent) MetricsRegisterer() prometheus.Registerer { return a.metrics.Registerer() }

// Run starts containerd (unless Options.Runtime or RuntimeEndpoint gives
// one), imports the pause image, registers the node and runs its pods until ctx ends. Pods keep
// running when Run returns, as with any kubelet restart.
func (a *Agent) Run(ctx context.Context) error {
	a.rt = a.opts.Runtime
	if a.rt == nil && a.opts.RuntimeEndpoint != "" {
		rt, err := containerd.Connect(ctx, a.opts.RuntimeEndpoint, containerd.ConnectOptions{CNIConfDir: a.opts.CNIConfDir, Logger: a.opts.Logger.With("component", "containerd")})
		if err != nil {
			return err
		}
		defer rt.Stop() // closes the clients only
		a.rt = rt
	}
	if a.rt == nil {
		if err := containerd.CheckInstalled(containerd.DefaultCNIBinDir); err != nil {
			return err
		}
		rt, err := containerd.Start(ctx, containerd.Options{DataDir: filepath.Join(a.opts.DataDir, "containerd"), Logger: a.opts.Logger.With("component", "containerd")})
		if err != nil {
			return err
		}
		defer rt.Stop()
		a.rt = rt
	}
	var sandboxImage string
	if a.rt.External() {
		sandboxImage = a.rt.SandboxImage(ctx)
	}
	if err := pause.Ensure(ctx, a.rt.Socket(), filepath.Join(a.opts.DataDir, "cache"), sandboxImage); err != nil {
		return fmt.Errorf("importing the pause image: %w", err)
	}
	a.cri = runtime.New(a.rt.Runtime, a.rt.Images, a.log)
	version, err := a.rt.Version(ctx)
	if err != nil {
		return err
	}
	a.host = readHost(a.opts, version)
	a.hostDNS = network.ResolvConf(resolvconf.Host())
	a.net = network.NewPodNetwork(a.rt.CNIConfDir(), filepath.Join(a.opts.DataDir, "cni", "ipam"), a.opts.PodMTU)
	a.events = events.Start(ctx, a.cs, a.opts.NodeName)
	a.probes = probes.NewRunner(a.cri, a.events, a.log)
	if err := os.MkdirAll(a.localPathDir(), 0o700); err != nil {
		return fmt.Errorf("local-path folder: %w", err)
	}
	a.vols = volumes.NewManager(volumes.Config{Dir: filepath.Join(a.opts.DataDir, "volumes"), Client: a.cs, NodeName: a.opts.NodeName,
		ResyncInterval: a.opts.VolumeResyncInterval, Allocatable: a.allocatable(), Events: a.events, Logger: a.log,
		Images: image.Mounter{Socket: a.rt.Socket()}})
	q := reconcile.NewQueue[types.NamespacedName]("kubelet-pods")
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer q.ShutDown()
	// Pods are synced from here on: static pods at once, the API's once
	// the node is registered and the informer has synced.
	if a.opts.ManifestsDir != "" {
		a.static = static.NewPods()
	}
	wg.Go(func() { reconcile.ProcessQueue(ctx, q, a.opts.Workers, a.log, a.syncPod) })
	wg.Go(func() { a.collectUsage(ctx) })
	if a.static != nil {
		wg.Go(func() { a.watchManifests(ctx, q) })
	}
	for {
		err := a.register(ctx)
		if err == nil {
			break
		}
		if inUse := (*network.BridgeInUseError)(nil); a.static == nil || ctx.Err() != nil || errors.As(err, &inUse) {
			return err
		}
		// Static pods keep running: try again until the API answers.
		a.log.Warn("registering the node; will retry", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	// After registering: a serving certificate asked for through a CSR is
	// approved for the addresses the Node reports.
	if err := a.serveAPI(ctx); err != nil {
		return fmt.Errorf("agent API: %w", err)
	}
	if err := a.renewLease(ctx); err != nil {
		return err
	}
	a.log.Info("node registered", "runtime", version, "ip", a.host.ip)

	factory := informers.NewSharedInformerFactoryWithOptions(a.cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", a.opts.NodeName).String()
		}))
	inf := factory.Core().V1().Pods()
	a.pods = inf.Lister()
	enqueue := func(obj any) {
		if p, ok := reconcile.DeletedObject[*corev1.Pod](obj); ok {
			q.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	all := informers.NewSharedInformerFactory(a.cs, 0)
	svcInf := all.Core().V1().Services()
	a.services = svcInf.Lister()
	svcInf.Informer()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	all.Start(ctx.Done())
	defer all.Shutdown()
	if !reconcile.WaitForCacheSync(ctx, inf.Informer().HasSynced, svcInf.Informer().HasSynced) {
		return ctx.Err()
	}
	a.apiSynced.Store(true)

	wg.Go(func() { a.heartbeat(ctx) })
	wg.Go(func() {
		c := &localpath.Cleaner{Client: a.cs, Node: a.opts.NodeName, Dir: a.localPathDir(), Log: a.log}
		if err := c.Run(ctx); err != nil && ctx.Err() == nil {
			a.log.Error("local-path volume cleanup stopped", "err", err)
		}
	})
	podNetwork := make(chan error, 1)
	wg.Go(func() { podNetwork <- a.awaitPodCIDR(ctx) })
	wg.Go(func() { a.relist(ctx, q) })
	if err := <-podNetwork; err != nil {
		cancel() // before the deferred informer shutdown, which waits for them
		return err
	}
	<-ctx.Done()
	return nil
}

// relist queues every pod of the node each SyncInterval, so that exits
// in the runtime are noticed, and removes sandboxes of pods that are gone.
func (a *Agent) relist(ctx context.Context, q interface{ Add(types.NamespacedName) }) {
	t := time.NewTicker(a.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pods, err := a.pods.List(labels.Everything())
		if err != nil {
			continue
		}
		live := map[types.UID]bool{}
		for _, p := range pods {
			live[p.UID] = true
			q.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
		if a.static != nil {
			for _, uid := range a.static.UIDs() {
				live[uid] = true
			}
		}
		a.removeOrphans(ctx, live)
		a.probes.Retain(live)
		a.cri.Forget(live)
	}
}

// syncPod syncs the pods of key: the static pod of that name, if any
// (static.go), and the API's pod unless it is a mirror pod. For the API's
// pod it plans and applies the actions until its plan is empty (or only
// waits), reports its status, and deletes it once a graceful deletion is
// complete.
func (a *Agent) syncPod(ctx context.Context, key types.NamespacedName) (res reconcile.Result, err error) {
	start := time.Now()
	defer func() { a.metrics.ObserveSync(time.Since(start), err) }()
	var pod *corev1.Pod
	if a.apiSynced.Load() {
		p, err := a.pods.Pods(key.Namespace).Get(key.Name)
		if err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		pod = p
	}
	res, err = a.syncStatic(ctx, key, pod)
	if err != nil || pod == nil || static.IsMirrorPod(pod) {
		return res, err
	}
	if pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "" {
		a.metrics.PodSeen(pod.UID)
	}
	if pod.DeletionTimestamp == nil {
		if ok, err := a.admit(ctx, pod); !ok || err != nil {
			return reconcile.Result{}, err
		}
	}
	if vres, wait := a.syncVolumes(ctx, pod); wait {
		return vres, nil
	}
	pod, resizePending, err := a.allocate(pod)
	if err != nil {
		return reconcile.Result{}, err
	}
	out, err := a.converge(ctx, pod)
	out.obs.ResizePending = resizePending
	if err != nil {
		if out.observed {
			a.updateStatus(ctx, pod, out.obs)
		}
		return reconcile.Result{}, err
	}
	status := a.updateStatus
	if out.deleted {
		status = a.updateFinalStatus
	}
	if err := status(ctx, pod, out.obs); err != nil {
		return reconcile.Result{}, err
	}
	if out.deleted {
		if err := a.forgetPod(pod.UID); err != nil {
			return reconcile.Result{}, err
		}
		zero := int64(0)
		err := a.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero,
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return reconcile.Result{}, err
		}
		if err == nil {
			a.log.Info("pod deleted", "pod", key.String())
		}
		return res, nil
	}
	if resizePending != nil {
		// A deferred resize is tried again, as upstream's kubelet retries
		// them, for room another pod's end may have made.
		out.next = earliest(out.next, time.Now().Add(podstatus.DeferredResizeRetry))
	}
	if !out.next.IsZero() {
		d := max(time.Until(out.next), 10*time.Millisecond)
		if res.RequeueAfter == 0 || d < res.RequeueAfter {
			res.RequeueAfter = d
		}
	}
	return res, nil
}

// forgetPod drops what the agent keeps of a pod that has stopped for good:
// its probes, volumes and files.
func (a *Agent) forgetPod(uid types.UID) error {
	a.admitted.forget(uid)
	a.resize.forget(uid)
	a.probes.Forget(uid)
	a.metrics.Forget(uid)
	if err := a.vols.Cleanup(uid); err != nil {
		return err
	}
	return a.removePodFiles(uid)
}

// converged is what converge leaves: what the runtime last showed
// (observed is false if it could not be read), when to look again without
// a change, and whether the pod's deletion is complete (all that is left
// is deleting the pod object).
type converged struct {
	obs      observed
	observed bool
	next     time.Time
	deleted  bool
}

// converge plans and applies pod's actions until its plan is empty or
// only deletes the pod object (at most five rounds). When an action fails
// its error is returned, and obs carries the reason a container could not
// start.
func (a *Agent) converge(ctx context.Context, pod *corev1.Pod) (converged, error) {
	var out converged
	for round := 0; ; round++ {
		obs, err := a.observe(ctx, pod)
		if err != nil {
			return out, err
		}
		out.obs, out.observed = obs, true
		a.probe(ctx, pod, &out.obs)
		var acts []action
		acts, out.next = plan(pod, out.obs, time.Now())
		out.deleted = len(acts) > 0 && acts[len(acts)-1].Kind == actDeletePod
		if out.deleted {
			acts = acts[:len(acts)-1]
		}
		if len(acts) == 0 || round == 4 {
			return out, nil
		}
		if err := a.apply(ctx, pod, out.obs, acts); err != nil {
			a.log.Warn("pod sync", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			if se := (*startError)(nil); errors.As(err, &se) {
				out.obs.StartErrors = map[string]corev1.ContainerStateWaiting{se.Container: {Reason: se.Reason, Message: se.Err.Error()}}
			}
			return out, err
		}
	}
}

// probe runs the due probes of pod's running containers and records
// their results in obs.
func (a *Agent) probe(ctx context.Context, pod *corev1.Pod, obs *observed) {
	running := map[string]probes.Running{}
	for name, runs := range obs.Containers {
		if len(runs) > 0 && runs[0].State == runtime.Running {
			running[name] = probes.Running{ID: runs[0].ID, StartedAt: runs[0].StartedAt}
		}
	}
	r := a.probes.Probe(ctx, pod, running, a.podIP(pod, *obs))
	obs.Ready, obs.Started, obs.Unhealthy = r.Ready, r.Started, r.Unhealthy
}

// updateStatus writes the pod's status as podStatus computes it, if it
// changed.
func (a *Agent) updateStatus(ctx context.Context, pod *corev1.Pod, obs observed) error {
	return a.writeStatus(ctx, pod, podStatus(pod, obs, nodeEnv{HostIP: a.host.ip}, time.Now()))
}

// updateFinalStatus writes the status of a deleted pod whose containers
// have all stopped, in a terminal phase, as upstream's kubelet does before
// the pod goes (a pod kept by a finalizer, such as a Job's, shows how it
// ended).
func (a *Agent) updateFinalStatus(ctx context.Context, pod *corev1.Pod, obs observed) error {
	st := podStatus(pod, obs, nodeEnv{HostIP: a.host.ip}, time.Now())
	podstatus.Terminate(&st)
	return a.writeStatus(ctx, pod, st)
}

func (a *Agent) writeStatus(ctx context.Context, pod *corev1.Pod, st corev1.PodStatus) error {
	if apiequality.Semantic.DeepEqual(st, pod.Status) {
		return nil
	}
	upd := pod.DeepCopy()
	upd.Status = st
	_, err := a.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		a.statusEvents(pod, pod.Status, st)
		if st.Phase == corev1.PodRunning && pod.Status.Phase != corev1.PodRunning {
			a.metrics.PodRunning(pod.UID)
		}
	}
	return err // a conflict requeues: the informer is behind
}

// apiPort is the port the Node reports for the agent API (0: none).
func (a *Agent) apiPort() int32 {
	if a.opts.IssueServingCert == nil {
		return 0
	}
	if a.opts.APIPort == 0 {
		return kubeletserver.DefaultPort
	}
	return int32(a.opts.APIPort)
}

// serveAPI starts the agent's HTTPS API when it is configured.
func (a *Agent) serveAPI(ctx context.Context) error {
	port := a.apiPort()
	if port == 0 {
		return nil
	}
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	if ip := net.ParseIP(a.host.ip); ip != nil {
		ips = append(ips, ip)
	}
	certPEM, keyPEM, err := a.opts.IssueServingCert([]string{a.opts.NodeName, "localhost"}, ips)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(a.opts.ClientCA) {
		return errors.New("no client CA certificate given")
	}
	// Callers show a client certificate of the cluster CA or a bearer
	// token; the API server authorizes each request (server.Auth).
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(int(port))))
	if err != nil {
		return err
	}
	go func() {
		h := &kubeletserver.Handler{DataDir: a.opts.DataDir, Streams: streams{a}, Summary: a.Summary, Pods: a.runningPods, Metrics: a.metrics}
		if err := kubeletserver.ServeListener(ctx, ln, tlsConfig, kubeletserver.NewAuth(a.opts.NodeName, a.cs).Wrap(h), a.log); err != nil {
			a.log.Error("agent API stopped", "err", err)
		}
	}()
	return nil
}
