package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/reconcile"
	schedcache "plainkube.dev/plainkube/internal/scheduler/cache"
	"plainkube.dev/plainkube/internal/scheduler/config"
	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/plugins"
	"plainkube.dev/plainkube/internal/scheduler/queue"
)

// Options configure a Scheduler. The zero value runs the default profile,
// without leader election.
type Options struct {
	// Config is the scheduler configuration; nil means config.Default().
	// It is defaulted and validated by New.
	Config *config.Config
	// LeaderElection, when set, makes Run schedule only while holding the
	// Lease; several schedulers can then run for availability.
	LeaderElection *LeaderElection
	// Informers is a shared informer factory to use (one per process);
	// nil makes one. Run starts it either way.
	Informers informers.SharedInformerFactory
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Registry replaces the in-tree plugin registry (tests).
	Registry framework.Registry
	// Rand breaks ties between equally scored nodes; nil seeds from the
	// clock.
	Rand *rand.Rand
	// Metrics, if set, registers the scheduler's metrics (upstream's
	// scheduler_* names) with it.
	Metrics prometheus.Registerer
}

// LeaderElection configures the Lease that schedulers elect a leader with
// (default kube-system/kube-scheduler).
type LeaderElection = reconcile.LeaderElection

// Scheduler is the scheduler. Make one with New and start it with Run.
type Scheduler struct {
	client      kubernetes.Interface
	factory     informers.SharedInformerFactory
	cfg         *config.Config
	profiles    map[string]*framework.Framework
	algorithms  map[string]*Algorithm
	recorders   map[string]record.EventRecorder
	broadcaster record.EventBroadcaster
	queue       *queue.Queue
	cache       *schedcache.Cache
	snapshot    *framework.Snapshot
	log         *slog.Logger
	le          *LeaderElection
	metrics     *metrics

	pods       corelisters.PodLister
	pdbs       policylisters.PodDisruptionBudgetLister
	pcs        schedulinglisters.PriorityClassLister
	namespaces corelisters.NamespaceLister
	pvcs       corelisters.PersistentVolumeClaimLister
	workloads  *workloadLister

	nsDirty  atomic.Bool
	nsLabels map[string]labels.Set

	handlers []cache.InformerSynced
	running  atomic.Bool
	binds    sync.WaitGroup
}

// New builds a scheduler that talks to the API server at cfg. Nothing runs
// until Run.
func New(cfg *rest.Config, opts Options) (*Scheduler, error) {
	c := opts.Config
	if c == nil {
		c = config.Default()
	} else {
		c.SetDefaults()
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(cfg)
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 50, 100 // upstream kube-scheduler's client limits
	}
	if rc.UserAgent == "" {
		rc.UserAgent = "plainkube-scheduler"
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "scheduler")
	registry := opts.Registry
	if registry == nil {
		registry = plugins.NewRegistry()
	}
	r := opts.Rand
	if r == nil {
		r = rand.New(rand.NewSource(time.Now().UnixNano()))
	}
	s := &Scheduler{
		client:     cs,
		cfg:        c,
		profiles:   map[string]*framework.Framework{},
		algorithms: map[string]*Algorithm{},
		recorders:  map[string]record.EventRecorder{},
		cache:      schedcache.New(),
		snapshot:   &framework.Snapshot{},
		log:        log,
		le:         opts.LeaderElection,
		metrics:    newMetrics(),
	}
	s.factory = opts.Informers
	if s.factory == nil {
		s.factory = informers.NewSharedInformerFactory(cs, 0)
	}
	events := map[string][]framework.ClusterEvent{}
	s.broadcaster = record.NewBroadcaster()
	for i := range c.Profiles {
		p := &c.Profiles[i]
		fwk, err := framework.NewFramework(registry, p, framework.WithClientSet(cs), framework.WithInformerFactory(s.factory),
			framework.WithExtensionPointObserver(s.metrics.extensionPoint), framework.WithPluginObserver(s.metrics.plugin))
		if err != nil {
			return nil, err
		}
		s.profiles[p.SchedulerName] = fwk
		s.algorithms[p.SchedulerName] = NewAlgorithm(rand.New(rand.NewSource(r.Int63())))
		s.recorders[p.SchedulerName] = s.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: p.SchedulerName})
		for name, evs := range fwk.EventsToRegister() {
			events[name] = evs
		}
	}
	s.queue = queue.New(queue.Options{
		InitialBackoff: time.Duration(c.PodInitialBackoffSeconds) * time.Second,
		MaxBackoff:     time.Duration(c.PodMaxBackoffSeconds) * time.Second,
		PluginEvents:   events,
	})
	s.metrics.queue = s.queue
	if opts.Metrics != nil {
		if err := s.metrics.register(opts.Metrics); err != nil {
			return nil, err
		}
	}
	if err := s.addEventHandlers(); err != nil {
		return nil, err
	}
	return s, nil
}

// Run starts the informers, waits for them to sync and schedules until
// ctx ends (with leader election, while it holds the Lease: one that
// loses it stops scheduling and campaigns again). It waits for bindings
// in progress before returning.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("scheduler: Run called twice")
	}
	s.factory.Start(ctx.Done())
	for typ, ok := range s.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("scheduler: informer for %v did not sync", typ)
		}
	}
	// The informers have synced; wait until the handlers have seen what
	// they hold, so that the first cycles see every node.
	if !reconcile.WaitForCacheSync(ctx, s.handlers...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("scheduler: event handlers did not sync")
	}
	sink := &typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")}
	w := s.broadcaster.StartRecordingToSink(sink)
	defer s.broadcaster.Shutdown()
	defer w.Stop()
	if s.le == nil {
		s.schedule(ctx)
		return nil
	}
	return s.runWithLeaderElection(ctx)
}

// runWithLeaderElection schedules while this scheduler holds its Lease;
// one that loses it steps down and campaigns again, until ctx ends.
func (s *Scheduler) runWithLeaderElection(ctx context.Context) error {
	reconcile.RunLeading(ctx, s.client, *s.le, "kube-scheduler", s.log, func(term context.Context) {
		s.schedule(term)
	})
	return nil
}

// schedule is the scheduling loop; it returns when ctx ends.
func (s *Scheduler) schedule(ctx context.Context) {
	defer s.binds.Wait()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if ctx.Err() != nil {
			return
		}
		if s.scheduleOne(ctx) {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-s.queue.Ready():
		case <-tick.C:
			s.queue.Flush()
		}
	}
}

// profileFor returns the profile scheduling pod, or nil if it is not ours.
func (s *Scheduler) profileFor(pod *v1.Pod) *framework.Framework {
	name := pod.Spec.SchedulerName
	if name == "" {
		name = config.DefaultSchedulerName
	}
	return s.profiles[name]
}

// fillSnapshot brings the snapshot up to date for a cycle.
func (s *Scheduler) fillSnapshot() {
	s.cache.UpdateSnapshot(s.snapshot)
	s.snapshot.NominatedPods = s.queue.NominatedPods()
	pdbs, _ := s.pdbs.List(labels.Everything())
	s.snapshot.PDBs = pdbs
	if s.nsDirty.Swap(false) || s.nsLabels == nil {
		nss, _ := s.namespaces.List(labels.Everything())
		m := make(map[string]labels.Set, len(nss))
		for _, ns := range nss {
			m[ns.Name] = labels.Set(ns.Labels)
		}
		s.nsLabels = m
	}
	s.snapshot.NamespaceLabels = s.nsLabels
	s.snapshot.PVC = s.lookupPVC
	s.snapshot.Workloads = s.workloads
}

// lookupPVC is the snapshot's claim lookup: the informer's claim
// namespace/name.
func (s *Scheduler) lookupPVC(key string) (*v1.PersistentVolumeClaim, bool) {
	ns, name, _ := strings.Cut(key, "/")
	pvc, err := s.pvcs.PersistentVolumeClaims(ns).Get(name)
	return pvc, err == nil
}

// scheduleOne schedules the next active pod; it reports whether there was
// one.
func (s *Scheduler) scheduleOne(ctx context.Context) bool {
	p, ok := s.queue.Pop()
	if !ok {
		return false
	}
	pod := p.Pod()
	fwk := s.profileFor(pod)
	if fwk == nil || pod.DeletionTimestamp != nil || s.cache.IsAssumedPod(pod) {
		s.queue.Done(pod)
		return true
	}
	log := s.log.With("pod", pod.Namespace+"/"+pod.Name)
	s.fillSnapshot()
	start := time.Now()
	d := s.decide(ctx, fwk, pod, log)
	if d.Err != nil {
		if ctx.Err() != nil {
			s.queue.Done(pod)
			return true
		}
		s.handleFailure(ctx, fwk, p, d, start, log)
		return true
	}
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = d.Host
	if err := s.cache.AssumePod(assumed); err != nil {
		s.handleFailure(ctx, fwk, p, Decision{Err: err}, start, log)
		return true
	}
	if st := fwk.RunReservePlugins(ctx, d.State, assumed, d.Host); !st.IsSuccess() {
		fwk.RunUnreservePlugins(ctx, d.State, assumed, d.Host)
		s.cache.ForgetPod(assumed)
		s.handleFailure(ctx, fwk, p, Decision{Err: st.AsError()}, start, log)
		return true
	}
	s.queue.DeleteNominatedPod(pod)
	s.queue.Done(pod)
	log.Debug("scheduled", "node", d.Host, "evaluated", d.EvaluatedNodes, "feasible", d.FeasibleNodes, "took", time.Since(start))
	s.binds.Add(1)
	go func() {
		defer s.binds.Done()
		s.bind(ctx, fwk, p, assumed, d.State, start, log)
	}()
	return true
}

// decide runs the profile's algorithm for pod. A panic in a plugin
// becomes the decision's error: the pod is retried with backoff, as after
// any scheduler error, and the other pods are scheduled meanwhile.
func (s *Scheduler) decide(ctx context.Context, fwk *framework.Framework, pod *v1.Pod, log *slog.Logger) (d Decision) {
	defer reconcile.Recover("scheduler", log, &d.Err)
	return s.algorithms[fwk.ProfileName()].Decide(ctx, fwk, s.snapshot, pod)
}

// bind runs the PreBind plugins (binding the pod's volumes, which may
// wait) and binds the pod; if either fails, the Reserve plugins' work is
// undone and the pod goes back to the queue.
func (s *Scheduler) bind(ctx context.Context, fwk *framework.Framework, p *queue.QueuedPodInfo, assumed *v1.Pod, state *framework.CycleState, start time.Time, log *slog.Logger) {
	if st := fwk.RunPreBindPlugins(ctx, state, assumed, assumed.Spec.NodeName); !st.IsSuccess() {
		fwk.RunUnreservePlugins(ctx, state, assumed, assumed.Spec.NodeName)
		s.cache.ForgetPod(assumed)
		s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, ActionType: framework.Delete, Label: "AssignedPodDelete"}, nil)
		if ctx.Err() != nil {
			return
		}
		if cur, err := s.pods.Pods(assumed.Namespace).Get(assumed.Name); isNotFound(err) ||
			(err == nil && (cur.UID != assumed.UID || cur.DeletionTimestamp != nil)) {
			log.Info("pod gone while its volumes were bound", "err", st.AsError())
			return // deleted meanwhile: nothing to retry
		}
		s.handleFailure(ctx, fwk, p, Decision{Err: st.AsError()}, start, log)
		return
	}
	b := &v1.Binding{
		ObjectMeta: metaForBinding(assumed),
		Target:     v1.ObjectReference{Kind: "Node", Name: assumed.Spec.NodeName},
	}
	err := s.client.CoreV1().Pods(assumed.Namespace).Bind(ctx, b, metaCreate)
	if err == nil {
		s.cache.FinishBinding(assumed)
		s.metrics.attempt(fwk.ProfileName(), resultScheduled, start)
		s.recorders[fwk.ProfileName()].Eventf(assumed, v1.EventTypeNormal, "Scheduled", "Successfully assigned %v/%v to %v", assumed.Namespace, assumed.Name, assumed.Spec.NodeName)
		log.Debug("bound", "node", assumed.Spec.NodeName)
		return
	}
	fwk.RunUnreservePlugins(ctx, state, assumed, assumed.Spec.NodeName)
	s.cache.ForgetPod(assumed)
	s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, ActionType: framework.Delete, Label: "AssignedPodDelete"}, nil)
	if isNotFoundOrConflict(err) || ctx.Err() != nil {
		// Deleted, or bound by someone else: the informer will tell.
		log.Info("binding not done", "node", assumed.Spec.NodeName, "err", err)
		return
	}
	log.Error("binding failed", "node", assumed.Spec.NodeName, "err", err)
	s.metrics.attempt(fwk.ProfileName(), resultError, start)
	p.UnschedulablePlugins = nil
	s.queue.AddUnschedulable(p)
	s.recorders[fwk.ProfileName()].Eventf(assumed, v1.EventTypeWarning, "FailedScheduling", "Binding rejected: %v", err)
}

// handleFailure records why a pod was not scheduled, carries out
// preemption, and hands the pod back to the queue.
func (s *Scheduler) handleFailure(ctx context.Context, fwk *framework.Framework, p *queue.QueuedPodInfo, d Decision, start time.Time, log *slog.Logger) {
	pod := p.Pod()
	reason := v1.PodReasonUnschedulable
	var fitErr *framework.FitError
	switch {
	case errors.As(d.Err, &fitErr):
		p.UnschedulablePlugins = fitErr.Diagnosis.UnschedulablePlugins
	case errors.Is(d.Err, framework.ErrNoNodesAvailable):
		p.UnschedulablePlugins = nil
	default:
		p.UnschedulablePlugins = nil
		reason = v1.PodReasonSchedulerError
	}
	if reason == v1.PodReasonUnschedulable {
		s.metrics.attempt(fwk.ProfileName(), resultUnschedulable, start)
	} else {
		s.metrics.attempt(fwk.ProfileName(), resultError, start)
	}
	msg := d.Err.Error()
	nominate := d.PostFilter != nil
	nominated := ""
	if nominate {
		nominated = d.PostFilter.NominatedNodeName
		if nominated != "" {
			s.preempt(ctx, fwk, pod, d.PostFilter, log)
		}
		s.queue.AddNominatedPod(p.PodInfo, nominated)
	}
	if reason == v1.PodReasonSchedulerError {
		// Upstream clears the nomination of a pod that hit an error.
		nominate, nominated = true, ""
		s.queue.AddNominatedPod(p.PodInfo, "")
	}
	s.queue.AddUnschedulable(p)
	if fitErr != nil {
		log.Info("unschedulable", "reason", msg)
	} else {
		log.Error("scheduling failed", "err", d.Err)
	}
	s.recorders[fwk.ProfileName()].Event(pod, v1.EventTypeWarning, "FailedScheduling", msg)
	cond := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: pod.Generation}
	if err := s.updatePodStatus(ctx, pod, func(st *v1.PodStatus) bool {
		changed := updatePodCondition(st, cond)
		if nominate && st.NominatedNodeName != nominated {
			st.NominatedNodeName = nominated
			changed = true
		}
		return changed
	}); err != nil && ctx.Err() == nil && !isNotFound(err) {
		log.Error("updating pod status", "err", err)
	}
}

// preempt evicts the victims chosen by preemption and clears the
// nominations of lower-priority pods on the node, through the API.
func (s *Scheduler) preempt(ctx context.Context, fwk *framework.Framework, preemptor *v1.Pod, res *framework.PostFilterResult, log *slog.Logger) {
	rec := s.recorders[fwk.ProfileName()]
	for _, victim := range res.Victims {
		cond := v1.PodCondition{
			Type:               v1.DisruptionTarget,
			Status:             v1.ConditionTrue,
			Reason:             v1.PodReasonPreemptionByScheduler,
			Message:            fmt.Sprintf("%s: preempting to accommodate a higher priority pod", preemptor.Spec.SchedulerName),
			ObservedGeneration: victim.Generation,
		}
		if err := s.updatePodStatus(ctx, victim, func(st *v1.PodStatus) bool { return updatePodCondition(st, cond) }); err != nil && !isNotFound(err) {
			log.Error("marking preemption victim", "victim", victim.Namespace+"/"+victim.Name, "err", err)
		}
		uid := victim.UID
		err := s.client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, deleteWithUID(uid))
		if err != nil && !isNotFound(err) {
			log.Error("deleting preemption victim", "victim", victim.Namespace+"/"+victim.Name, "err", err)
			continue
		}
		rec.Eventf(victim, v1.EventTypeNormal, "Preempted", "Preempted by pod %v on node %v", preemptor.UID, res.NominatedNodeName)
		log.Info("preempted", "victim", victim.Namespace+"/"+victim.Name, "node", res.NominatedNodeName)
	}
	for _, p := range res.ClearNominated {
		s.queue.DeleteNominatedPod(p)
		if err := s.updatePodStatus(ctx, p, func(st *v1.PodStatus) bool {
			if st.NominatedNodeName == "" {
				return false
			}
			st.NominatedNodeName = ""
			return true
		}); err != nil && !isNotFound(err) {
			log.Error("clearing nominated node", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
	}
}

// workloads for default spreading.
type workloadLister struct {
	services corelisters.ServiceLister
	rss      appslisters.ReplicaSetLister
	sss      appslisters.StatefulSetLister
	rcs      corelisters.ReplicationControllerLister
}

var _ framework.WorkloadLister = (*workloadLister)(nil)
