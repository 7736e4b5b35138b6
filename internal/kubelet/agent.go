package kubelet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

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
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/image/pause"
	"plainkube.dev/plainkube/internal/kubelet/containerd"
	kubeletserver "plainkube.dev/plainkube/internal/kubelet/server"
)

// Agent is the node agent of one node whose pods run in containerd.
type Agent struct {
	opts    Options
	cs      kubernetes.Interface
	log     *slog.Logger
	rt      *containerd.Process
	host    host
	nodeUID types.UID
	netMu   sync.Mutex
	podCIDR string // the Node's spec.podCIDR, once configured
	probes  probes
	pods    listersv1.PodLister
	// services feed the containers' service environment variables.
	services listersv1.ServiceLister
	// recorder records events (nil until Run starts it).
	recorder     record.EventRecorder
	hostDNS      resolvConf // the node's resolver configuration
	termMessages termMessages
	vols         volumeManager
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
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Agent{opts: opts, cs: cs, log: opts.Logger.With("node", opts.NodeName)}, nil
}

// NodeName is the name of the agent's Node.
func (a *Agent) NodeName() string { return a.opts.NodeName }

// Run starts containerd (unless Options.Runtime is set), imports the pause
// image, registers the node and runs its pods until ctx ends. Pods keep
// running when Run returns, as with any kubelet restart.
func (a *Agent) Run(ctx context.Context) error {
	a.rt = a.opts.Runtime
	if a.rt == nil {
		if err := containerd.CheckInstalled(containerd.DefaultCNIBinDir); err != nil {
			return err
		}
		rt, err := containerd.Start(ctx, containerd.Options{DataDir: filepath.Join(a.opts.DataDir, "containerd"), Logger: a.opts.Logger})
		if err != nil {
			return err
		}
		defer rt.Stop()
		a.rt = rt
	}
	if err := pause.Ensure(ctx, a.rt.Socket(), filepath.Join(a.opts.DataDir, "cache")); err != nil {
		return fmt.Errorf("importing the pause image: %w", err)
	}
	version, err := a.rt.Version(ctx)
	if err != nil {
		return err
	}
	a.host = readHost(a.opts, version)
	a.hostDNS = hostResolvConf()
	a.startRecorder(ctx)
	if err := a.register(ctx); err != nil {
		return err
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
	q := controller.NewQueue[types.NamespacedName]("kubelet-pods")
	defer q.ShutDown()
	enqueue := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
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
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced, svcInf.Informer().HasSynced) {
		return ctx.Err()
	}

	var wg sync.WaitGroup
	wg.Go(func() { a.heartbeat(ctx) })
	wg.Go(func() { a.awaitPodCIDR(ctx) })
	wg.Go(func() { controller.ProcessQueue(ctx, q, a.opts.Workers, a.log, a.syncPod) })
	wg.Go(func() { a.relist(ctx, q) })
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
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
		a.removeOrphans(ctx, live)
		a.probes.forget(live)
		a.termMessages.forget(live)
	}
}

// syncPod plans and applies the actions for one pod until its plan is
// empty (or only waits), reports its status, and deletes it once a
// graceful deletion is complete.
func (a *Agent) syncPod(ctx context.Context, key types.NamespacedName) (controller.Result, error) {
	pod, err := a.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if res, wait := a.syncVolumes(ctx, pod); wait {
		return res, nil
	}
	var (
		obs     observed
		next    time.Time
		deleted bool
	)
	for round := 0; ; round++ {
		if obs, err = a.observe(ctx, pod); err != nil {
			return controller.Result{}, err
		}
		a.probe(ctx, pod, &obs)
		var acts []action
		acts, next = plan(pod, obs, time.Now())
		deleted = len(acts) > 0 && acts[len(acts)-1].Kind == actDeletePod
		if deleted {
			acts = acts[:len(acts)-1]
		}
		if len(acts) == 0 || round == 4 {
			break
		}
		if err := a.apply(ctx, pod, obs, acts); err != nil {
			a.log.Warn("pod sync", "pod", key.String(), "err", err)
			if se := (*startError)(nil); errors.As(err, &se) {
				obs.StartErrors = map[string]corev1.ContainerStateWaiting{se.Container: {Reason: se.Reason, Message: se.Err.Error()}}
			}
			a.updateStatus(ctx, pod, obs)
			return controller.Result{}, err
		}
	}
	if err := a.updateStatus(ctx, pod, obs); err != nil {
		return controller.Result{}, err
	}
	if deleted {
		a.probes.set(pod.UID, nil)
		if err := a.cleanupVolumes(pod.UID); err != nil {
			return controller.Result{}, err
		}
		if err := a.removePodFiles(pod.UID); err != nil {
			return controller.Result{}, err
		}
		zero := int64(0)
		err := a.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero,
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return controller.Result{}, err
		}
		if err == nil {
			a.log.Info("pod deleted", "pod", key.String())
		}
		return controller.Result{}, nil
	}
	if !next.IsZero() {
		return controller.Result{RequeueAfter: max(time.Until(next), 10*time.Millisecond)}, nil
	}
	return controller.Result{}, nil
}

// updateStatus writes the pod's status as podStatus computes it, if it
// changed.
func (a *Agent) updateStatus(ctx context.Context, pod *corev1.Pod, obs observed) error {
	st := podStatus(pod, obs, nodeEnv{HostIP: a.host.ip}, time.Now())
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
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(int(port))))
	if err != nil {
		return err
	}
	go func() {
		if err := kubeletserver.ServeListener(ctx, ln, tlsConfig, &kubeletserver.Handler{DataDir: a.opts.DataDir, Streams: streams{a}}, a.log); err != nil {
			a.log.Error("agent API stopped", "err", err)
		}
	}()
	return nil
}
