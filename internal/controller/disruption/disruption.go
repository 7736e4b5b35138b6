package disruption

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "disruption"

// Component is the source of the events the controller records, as
// upstream's.
const Component = "controllermanager"

// DefaultStalePodDisruptionTimeout is how long a pod may carry an
// eviction's DisruptionTarget condition without being deleted before the
// condition is set back to False.
const DefaultStalePodDisruptionTimeout = 2 * time.Minute

var pdbKind = policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget")

// Controller is the disruption controller.
type Controller struct {
	controller.Base
	// StalePodDisruptionTimeout: see DefaultStalePodDisruptionTimeout; set
	// before Run.
	StalePodDisruptionTimeout time.Duration
	// Now is the controller's clock (time.Now if nil).
	Now func() time.Time

	cfg *rest.Config
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's clients from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base, StalePodDisruptionTimeout: DefaultStalePodDisruptionTimeout, cfg: rest.CopyConfig(cfg)}, nil
}

// loop is one Run of the controller.
type loop struct {
	ctx    context.Context
	client kubernetes.Interface
	log    *slog.Logger
	rec    record.EventRecorder
	now    func() time.Time

	pdbs         policylisters.PodDisruptionBudgetLister
	pods         corelisters.PodLister
	rcs          corelisters.ReplicationControllerLister
	replicaSets  appslisters.ReplicaSetLister
	deployments  appslisters.DeploymentLister
	statefulSets appslisters.StatefulSetLister

	mapper *restmapper.DeferredDiscoveryRESTMapper
	scales scale.ScalesGetter

	stale        workqueue.TypedRateLimitingInterface[string]
	staleTimeout time.Duration
}

// Run watches budgets, pods and the pods' controllers and keeps every
// budget's status, with workers workers, until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	pdbInf := b.Informers().Policy().V1().PodDisruptionBudgets()
	podInf := b.SharedInformers().Core().V1().Pods()
	rcInf := b.Informers().Core().V1().ReplicationControllers()
	rsInf := b.Informers().Apps().V1().ReplicaSets()
	depInf := b.Informers().Apps().V1().Deployments()
	ssInf := b.Informers().Apps().V1().StatefulSets()
	disc := memory.NewMemCacheClient(c.Client.Discovery())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(disc)
	scales, err := scale.NewForConfig(c.cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disc))
	if err != nil {
		return err
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	l := &loop{ctx: ctx, client: c.Client, log: b.Logger(), now: now,
		pdbs: pdbInf.Lister(), pods: podInf.Lister(), rcs: rcInf.Lister(), replicaSets: rsInf.Lister(),
		deployments: depInf.Lister(), statefulSets: ssInf.Lister(),
		mapper: mapper, scales: scales,
		stale:        reconcile.NewQueue[string]("stale_pod_disruption"),
		staleTimeout: c.StalePodDisruptionTimeout,
	}
	b.For(pdbInf.Informer(), pdbKind).
		Watches(podInf.Informer(), controller.AllEvents, l.podBudget).
		Watches(podInf.Informer(), controller.Added|controller.Updated, l.podStale).
		Watches(rcInf.Informer(), controller.Updated, l.scaleChanged).
		Watches(rsInf.Informer(), controller.Updated, l.scaleChanged).
		Watches(depInf.Informer(), controller.Updated, l.scaleChanged).
		Watches(ssInf.Informer(), controller.Updated, l.scaleChanged).
		Process(l.stale, 1, l.syncStale)
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		l.rec = rec
		return controller.Shape[State, Plan]{Observe: l.observe, Plan: plan, Apply: l.apply, Log: l.log}.Reconcile
	})
}

// podBudget is the key of the budget of a pod: the first whose selector
// matches it (a pod under more than one gets a warning, as upstream).
func (l *loop) podBudget(_, obj any) []string {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	pdbs, err := l.pdbs.GetPodPodDisruptionBudgets(pod)
	if err != nil || len(pdbs) == 0 {
		return nil
	}
	if len(pdbs) > 1 {
		l.rec.Eventf(pod, corev1.EventTypeWarning, "MultiplePodDisruptionBudgets",
			"Pod %q/%q matches multiple PodDisruptionBudgets.  Chose %q arbitrarily.", pod.Namespace, pod.Name, pdbs[0].Name)
	}
	return []string{pdbs[0].Namespace + "/" + pdbs[0].Name}
}

// scaleChanged: a controller's desired replicas changed, which the
// budgets of its namespace with a rule relative to the scale count on (the
// next pod event would show it too, but a scale-down may bring none).
func (l *loop) scaleChanged(old, cur any) []string {
	if replicasOf(old) == replicasOf(cur) {
		return nil
	}
	m, err := apimeta.Accessor(cur)
	if err != nil {
		return nil
	}
	pdbs, err := l.pdbs.PodDisruptionBudgets(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, pdb := range pdbs {
		if needsScale(&pdb.Spec) {
			keys = append(keys, pdb.Namespace+"/"+pdb.Name)
		}
	}
	return keys
}

// replicasOf is the desired replicas of a controller (-1: not one).
func replicasOf(obj any) int32 {
	switch o := obj.(type) {
	case *corev1.ReplicationController:
		return replicas(o.Spec.Replicas)
	case *appsv1.ReplicaSet:
		return replicas(o.Spec.Replicas)
	case *appsv1.Deployment:
		return replicas(o.Spec.Replicas)
	case *appsv1.StatefulSet:
		return replicas(o.Spec.Replicas)
	}
	return -1
}

// podStale puts a pod with a stale DisruptionTarget condition in the
// stale queue, to be looked at when the condition has been so for the
// timeout.
func (l *loop) podStale(_, obj any) []string {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	if stale, after := staleDisruption(pod, l.now(), l.staleTimeout); stale {
		l.stale.AddAfter(pod.Namespace+"/"+pod.Name, after)
	}
	return nil
}

// observe reads a budget, its pods and, when its rule needs it, its
// controllers' scale.
func (l *loop) observe(key string) (State, bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return State{}, false, nil
	}
	pdb, err := l.pdbs.PodDisruptionBudgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	st := State{PDB: pdb, Now: l.now()}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		st.PodsErr = err
		return st, true, nil
	}
	if st.Pods, err = l.pods.Pods(ns).List(sel); err != nil {
		return State{}, false, err
	}
	if needsScale(&pdb.Spec) {
		st.Scale, st.ScaleErr = l.expectedScale(st.Pods)
	}
	return st, true, nil
}

// apply records the plan's events and writes the budget's status.
func (l *loop) apply(ctx context.Context, st State, p Plan) (reconcile.Result, error) {
	for _, e := range p.Events {
		if e.Pod != nil {
			l.rec.Event(e.Pod, e.Type, e.Reason, e.Message)
		} else {
			l.rec.Event(st.PDB, e.Type, e.Reason, e.Message)
		}
	}
	if p.Status != nil {
		pdb := st.PDB.DeepCopy()
		pdb.Status = *p.Status
		if _, err := l.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: p.RecheckAfter}, nil
}

// syncStale sets a pod's stale DisruptionTarget condition back to False.
func (l *loop) syncStale(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return reconcile.Result{}, nil
	}
	pod, err := l.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	now := l.now()
	stale, after := staleDisruption(pod, now, l.staleTimeout)
	if !stale {
		return reconcile.Result{}, nil
	}
	if after > 0 {
		return reconcile.Result{RequeueAfter: after}, nil
	}
	pod = pod.DeepCopy()
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == corev1.DisruptionTarget {
			c.Status, c.Reason, c.Message = corev1.ConditionFalse, "", ""
			c.LastTransitionTime = metav1.NewTime(now)
			c.ObservedGeneration = pod.Generation
		}
	}
	if _, err := l.client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	l.log.Info("reset stale DisruptionTarget condition to False", "namespace", ns, "pod", name)
	return reconcile.Result{}, nil
}

// ---- the scale of the pods' controllers ----

// controllerScale is a controller found for a pod: its UID and desired
// replicas.
type controllerScale struct {
	uid      types.UID
	replicas int32
}

// finder finds the controller a pod's controller reference names, if of
// its kind (nil, nil: not its kind, or not there).
type finder func(ref *metav1.OwnerReference, namespace string) (*controllerScale, error)

// expectedScale sums the desired replicas of the pods' controllers, each
// counted once and looked up once per controller reference (a /scale is
// a live read); pods without a controller are unmanaged. A pod whose
// controller no finder knows is an error, as upstream.
func (l *loop) expectedScale(pods []*corev1.Pod) (*Scale, error) {
	finders := []finder{l.replicationController, l.deployment, l.replicaSet, l.statefulSet, l.scaleSubresource}
	// scales is by the controller counted (a Deployment, not its
	// ReplicaSets); looked up, by the UID the pods' references name.
	scales := map[types.UID]int32{}
	lookedUp := map[types.UID]bool{}
	s := &Scale{}
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil {
			s.Unmanaged = append(s.Unmanaged, pod.Name)
			continue
		}
		if lookedUp[ref.UID] {
			continue
		}
		found := false
		for _, find := range finders {
			cs, err := find(ref, pod.Namespace)
			if err != nil {
				return nil, err
			}
			if cs != nil {
				scales[cs.uid], found = cs.replicas, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		lookedUp[ref.UID] = true
	}
	for _, n := range scales {
		s.Expected += n
	}
	return s, nil
}

// refIs reports whether ref names kind in one of groups.
func refIs(ref *metav1.OwnerReference, kind string, groups ...string) (bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false, err
	}
	return ref.Kind == kind && slices.Contains(groups, gv.Group), nil
}

func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

func (l *loop) replicationController(ref *metav1.OwnerReference, ns string) (*controllerScale, error) {
	if ok, err := refIs(ref, "ReplicationController", ""); !ok || err != nil {
		return nil, err
	}
	rc, err := l.rcs.ReplicationControllers(ns).Get(ref.Name)
	if err != nil || rc.UID != ref.UID {
		return nil, nil
	}
	return &controllerScale{rc.UID, replicas(rc.Spec.Replicas)}, nil
}

// ownedReplicaSet is the ReplicaSet ref names, if in the cache with its
// UID.
func (l *loop) ownedReplicaSet(ref *metav1.OwnerReference, ns string) (*appsv1.ReplicaSet, error) {
	if ok, err := refIs(ref, "ReplicaSet", "apps", "extensions"); !ok || err != nil {
		return nil, err
	}
	rs, err := l.replicaSets.ReplicaSets(ns).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil, nil
	}
	return rs, nil
}

// replicaSet finds a ReplicaSet that no Deployment controls.
func (l *loop) replicaSet(ref *metav1.OwnerReference, ns string) (*controllerScale, error) {
	rs, err := l.ownedReplicaSet(ref, ns)
	if rs == nil || err != nil {
		return nil, err
	}
	if owner := metav1.GetControllerOfNoCopy(rs); owner != nil && owner.Kind == "Deployment" {
		return nil, nil
	}
	return &controllerScale{rs.UID, replicas(rs.Spec.Replicas)}, nil
}

// deployment finds the Deployment of a pod's ReplicaSet.
func (l *loop) deployment(ref *metav1.OwnerReference, ns string) (*controllerScale, error) {
	rs, err := l.ownedReplicaSet(ref, ns)
	if rs == nil || err != nil {
		return nil, err
	}
	owner := metav1.GetControllerOfNoCopy(rs)
	if owner == nil {
		return nil, nil
	}
	if ok, err := refIs(owner, "Deployment", "apps", "extensions"); !ok || err != nil {
		return nil, err
	}
	d, err := l.deployments.Deployments(ns).Get(owner.Name)
	if err != nil || d.UID != owner.UID {
		return nil, nil
	}
	return &controllerScale{d.UID, replicas(d.Spec.Replicas)}, nil
}

func (l *loop) statefulSet(ref *metav1.OwnerReference, ns string) (*controllerScale, error) {
	if ok, err := refIs(ref, "StatefulSet", "apps"); !ok || err != nil {
		return nil, err
	}
	ss, err := l.statefulSets.StatefulSets(ns).Get(ref.Name)
	if err != nil || ss.UID != ref.UID {
		return nil, nil
	}
	return &controllerScale{ss.UID, replicas(ss.Spec.Replicas)}, nil
}

// scaleSubresource reads the /scale subresource of any other kind of
// controller (a custom resource's included).
func (l *loop) scaleSubresource(ref *metav1.OwnerReference, ns string) (*controllerScale, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, err
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	mapping, err := l.mapper.RESTMapping(gk, gv.Version)
	if apimeta.IsNoMatchError(err) {
		// A kind served since discovery was cached (a new CRD).
		l.mapper.Reset()
		mapping, err = l.mapper.RESTMapping(gk, gv.Version)
	}
	if err != nil {
		return nil, err
	}
	gr := mapping.Resource.GroupResource()
	sc, err := l.scales.Scales(ns).Get(l.ctx, gr, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Either the object is gone or its kind has no /scale.
		has, derr := l.servesScale(mapping.Resource)
		if derr != nil {
			return nil, derr
		}
		if !has {
			return nil, fmt.Errorf("%s does not implement the scale subresource", gr.String())
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if sc.UID != ref.UID {
		return nil, nil
	}
	return &controllerScale{sc.UID, sc.Spec.Replicas}, nil
}

// servesScale reports whether discovery lists a /scale subresource of
// kind Scale for gvr.
func (l *loop) servesScale(gvr schema.GroupVersionResource) (bool, error) {
	list, err := l.client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name != gvr.Resource+"/scale" || r.Kind != "Scale" {
			continue
		}
		for _, v := range scale.NewScaleConverter().ScaleVersions() {
			if r.Group == v.Group && r.Version == v.Version {
				return true, nil
			}
		}
	}
	return false, nil
}
