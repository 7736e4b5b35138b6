package podgc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "podgc"

// Defaults, as upstream.
const (
	DefaultPeriod                 = 20 * time.Second
	DefaultQuarantine             = 40 * time.Second
	DefaultTerminatedPodThreshold = 12500
)

// passKey is the only key in the queue: a pass over all pods.
const passKey = "pods"

// Controller is the pod garbage collector.
type Controller struct {
	controller.Base
	// Period is how often a pass runs; set before Run.
	Period time.Duration
	// Quarantine is how long a node must be missing before its pods are
	// deleted; set before Run.
	Quarantine time.Duration
	// TerminatedPodThreshold is how many terminated pods are kept (0 or
	// less: all); set before Run.
	TerminatedPodThreshold int

	now func() time.Time

	mu           sync.Mutex
	missingSince map[string]time.Time
	// deleted holds the pods this controller deleted that the cache may
	// still show; a pass ignores them (they would count as terminated
	// twice).
	deleted map[types.UID]bool
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{
		Base:                   base,
		Period:                 DefaultPeriod,
		Quarantine:             DefaultQuarantine,
		TerminatedPodThreshold: DefaultTerminatedPodThreshold,
		now:                    time.Now,
		missingSince:           map[string]time.Time{},
		deleted:                map[types.UID]bool{},
	}, nil
}

// Run watches Pods and Nodes and collects pods with workers workers (one
// pass runs at a time) until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Name, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	podInf := b.SharedInformers().Core().V1().Pods()
	nodeInf := b.SharedInformers().Core().V1().Nodes()
	podLister, nodeLister := podInf.Lister(), nodeInf.Lister()
	nodeSynced := nodeInf.Informer().HasSynced
	pass := []string{passKey}
	b.Watches(podInf.Informer(), controller.Added|controller.Updated, func(_, obj any) []string {
		// A pod that needs collecting soon triggers a pass.
		pod, ok := obj.(*corev1.Pod)
		if !ok || !nodeSynced() {
			return nil
		}
		if pod.DeletionTimestamp != nil && pod.Spec.NodeName == "" {
			return pass
		}
		if pod.Spec.NodeName != "" {
			if _, err := nodeLister.Get(pod.Spec.NodeName); apierrors.IsNotFound(err) {
				return pass
			}
		}
		return nil
	}).
		Watches(nodeInf.Informer(), controller.Updated|controller.Deleted, func(old, obj any) []string {
			if old == nil {
				return pass // deleted
			}
			// A node taken out of service.
			o, ok1 := old.(*corev1.Node)
			n, ok2 := obj.(*corev1.Node)
			if ok1 && ok2 && hasTaintKey(n, corev1.TaintNodeOutOfService) && !hasTaintKey(o, corev1.TaintNodeOutOfService) {
				return pass
			}
			return nil
		})
	b.Queue().Add(passKey)
	log := b.Logger()
	// One pass at a time: the queue never hands the only key to two workers.
	return b.Run(ctx, 1, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, _ string) (reconcile.Result, error) {
			return c.pass(ctx, log, podLister, nodeLister)
		}
	})
}

// pass plans and carries out one collection over the cached pods.
func (c *Controller) pass(ctx context.Context, log *slog.Logger, podLister corelisters.PodLister, nodeLister corelisters.NodeLister) (reconcile.Result, error) {
	cached, err := podLister.List(labels.Everything())
	if err != nil {
		return reconcile.Result{}, err
	}
	pods := cached[:0:0]
	stillCached := map[types.UID]bool{}
	for _, p := range cached {
		if c.deleted[p.UID] {
			stillCached[p.UID] = true
			continue
		}
		pods = append(pods, p)
	}
	c.deleted = stillCached
	nodeList, err := nodeLister.List(labels.Everything())
	if err != nil {
		return reconcile.Result{}, err
	}
	nodes := make(map[string]*corev1.Node, len(nodeList))
	for _, n := range nodeList {
		nodes[n.Name] = n
	}
	now := c.now()
	c.mu.Lock()
	d := plan(State{Pods: pods, Nodes: nodes, MissingSince: c.missingSince, Now: now,
		Quarantine: c.Quarantine, TerminatedThreshold: c.TerminatedPodThreshold})
	c.missingSince = d.MissingSince
	c.mu.Unlock()

	var errs []error
	collect := func(pod *corev1.Pod, cond *corev1.PodCondition, why string) {
		if err := c.markFailedAndDelete(ctx, pod, cond); err != nil {
			errs = append(errs, err)
			return
		}
		c.deleted[pod.UID] = true
		log.Info("force-deleted pod", "namespace", pod.Namespace, "pod", pod.Name, "reason", why)
	}
	for node, orphans := range d.Orphaned {
		// The cache may be behind: make sure the node is really gone.
		_, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil {
			c.mu.Lock()
			c.missingSince[node] = now // back into quarantine
			c.mu.Unlock()
			continue
		}
		if !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		for _, pod := range orphans {
			collect(pod, &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists"}, "node "+node+" no longer exists")
		}
	}
	for _, pod := range d.UnscheduledTerminating {
		collect(pod, nil, "terminating and never scheduled")
	}
	for _, pod := range d.TerminatingOutOfService {
		collect(pod, nil, "terminating on an out-of-service node")
	}
	for _, pod := range d.Terminated {
		collect(pod, nil, "terminated pods over threshold")
	}
	if len(errs) > 0 {
		return reconcile.Result{}, errors.Join(errs...)
	}
	next := c.Period
	if !d.NextQuarantineEnd.IsZero() {
		next = min(next, d.NextQuarantineEnd.Sub(now)+10*time.Millisecond)
	}
	return reconcile.Result{RequeueAfter: max(next, time.Millisecond)}, nil
}

// markFailedAndDelete moves a pod that has not finished to phase Failed
// (adding cond if given), since no kubelet will, then deletes it at once.
func (c *Controller) markFailedAndDelete(ctx context.Context, pod *corev1.Pod, cond *corev1.PodCondition) error {
	api := c.Client.CoreV1().Pods(pod.Namespace)
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		status := map[string]any{"phase": corev1.PodFailed}
		if cond != nil {
			cc := *cond
			cc.LastTransitionTime = metav1.NewTime(c.now())
			status["conditions"] = []corev1.PodCondition{cc}
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID}, "status": status})
		if err != nil {
			return err
		}
		if _, err := api.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("marking pod %s/%s failed: %w", pod.Namespace, pod.Name, err)
		}
	}
	zero := int64(0)
	err := api.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
