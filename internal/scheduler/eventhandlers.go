package scheduler

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/reconcile"
	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Priorities of the built-in PriorityClasses, which exist even when their
// objects do not.
var systemPriorityClasses = map[string]int32{
	"system-node-critical":    2000001000,
	"system-cluster-critical": 2000000000,
}

func (s *Scheduler) addEventHandlers() error {
	f := s.factory
	podInf := f.Core().V1().Pods()
	nodeInf := f.Core().V1().Nodes()
	pcInf := f.Scheduling().V1().PriorityClasses()
	pdbInf := f.Policy().V1().PodDisruptionBudgets()
	nsInf := f.Core().V1().Namespaces()
	pvcInf := f.Core().V1().PersistentVolumeClaims()
	svcInf := f.Core().V1().Services()
	rsInf := f.Apps().V1().ReplicaSets()
	ssInf := f.Apps().V1().StatefulSets()
	rcInf := f.Core().V1().ReplicationControllers()

	s.pods = podInf.Lister()
	s.pcs = pcInf.Lister()
	s.pdbs = pdbInf.Lister()
	s.namespaces = nsInf.Lister()
	s.pvcs = pvcInf.Lister()
	s.workloads = &workloadLister{services: svcInf.Lister(), rss: rsInf.Lister(), sss: ssInf.Lister(), rcs: rcInf.Lister()}
	// Listers alone register their informers with the factory; the
	// handlers below mark derived data stale.
	_ = pdbInf.Informer()
	_ = svcInf.Informer()
	_ = rsInf.Informer()
	_ = ssInf.Informer()
	_ = rcInf.Informer()
	_ = pcInf.Informer()

	if err := s.handle(nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			n := obj.(*v1.Node)
			s.cache.AddNode(n)
			s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourceNode, ActionType: framework.Add, Label: "NodeAdd"}, nil)
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, cur := oldObj.(*v1.Node), newObj.(*v1.Node)
			s.cache.UpdateNode(cur)
			if a := nodeChange(old, cur); a != 0 {
				s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourceNode, ActionType: a, Label: "NodeUpdate"}, nil)
			}
		},
		DeleteFunc: func(obj any) {
			n, ok := reconcile.DeletedObject[*v1.Node](obj)
			if !ok {
				return
			}
			s.cache.RemoveNode(n)
			s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourceNode, ActionType: framework.Delete, Label: "NodeDelete"}, nil)
		},
	})); err != nil {
		return err
	}

	if err := s.handle(podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onPod(nil, obj.(*v1.Pod)) },
		UpdateFunc: func(oldObj, newObj any) { s.onPod(oldObj.(*v1.Pod), newObj.(*v1.Pod)) },
		DeleteFunc: func(obj any) {
			if p, ok := reconcile.DeletedObject[*v1.Pod](obj); ok {
				s.onPodDelete(p)
			}
		},
	})); err != nil {
		return err
	}

	if err := s.handle(nsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			s.nsDirty.Store(true)
			s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourceNamespace, ActionType: framework.Add}, nil)
		},
		UpdateFunc: func(oldObj, newObj any) {
			if !reflect.DeepEqual(oldObj.(*v1.Namespace).Labels, newObj.(*v1.Namespace).Labels) {
				s.nsDirty.Store(true)
				s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourceNamespace, ActionType: framework.UpdateOther}, nil)
			}
		},
		DeleteFunc: func(any) { s.nsDirty.Store(true) },
	})); err != nil {
		return err
	}

	if err := s.handle(pvcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePVC, ActionType: framework.Add}, nil)
		},
		UpdateFunc: func(any, any) {
			s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePVC, ActionType: framework.UpdateOther}, nil)
		},
	})); err != nil {
		return err
	}

	// Volumes and their classes: a pod waiting for a volume to bind may
	// fit once one appears or changes.
	for res, inf := range map[string]cache.SharedIndexInformer{
		framework.ResourcePV:           f.Core().V1().PersistentVolumes().Informer(),
		framework.ResourceStorageClass: f.Storage().V1().StorageClasses().Informer(),
	} {
		if err := s.handle(inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { s.queue.MoveOnEvent(framework.ClusterEvent{Resource: res, ActionType: framework.Add}, nil) },
			UpdateFunc: func(any, any) {
				s.queue.MoveOnEvent(framework.ClusterEvent{Resource: res, ActionType: framework.UpdateOther}, nil)
			},
		})); err != nil {
			return err
		}
	}
	return nil
}

// handle keeps a handler registration, so that Run can wait until the
// handler (not just the informer) has seen every existing object.
func (s *Scheduler) handle(r cache.ResourceEventHandlerRegistration, err error) error {
	if err != nil {
		return err
	}
	s.handlers = append(s.handlers, r.HasSynced)
	return nil
}

// nodeChange classifies a node update by what scheduling cares about (0:
// nothing, e.g. a heartbeat).
func nodeChange(old, cur *v1.Node) framework.ActionType {
	var a framework.ActionType
	if !apiequality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable) {
		a |= framework.UpdateNodeAllocatable
	}
	if !reflect.DeepEqual(old.Labels, cur.Labels) {
		a |= framework.UpdateNodeLabel
	}
	if !reflect.DeepEqual(old.Spec.Taints, cur.Spec.Taints) || old.Spec.Unschedulable != cur.Spec.Unschedulable {
		a |= framework.UpdateNodeTaint
	}
	if conditionsKey(old) != conditionsKey(cur) {
		a |= framework.UpdateNodeCondition
	}
	if !reflect.DeepEqual(old.Status.Images, cur.Status.Images) {
		a |= framework.UpdateNodeOther
	}
	return a
}

func conditionsKey(n *v1.Node) string {
	k := ""
	for _, c := range n.Status.Conditions {
		k += string(c.Type) + "=" + string(c.Status) + ";"
	}
	return k
}

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// onPod handles a pod add (old nil) or update.
func (s *Scheduler) onPod(old, cur *v1.Pod) {
	cur = s.withPriority(cur)
	if cur.Spec.NodeName != "" {
		// Bound (by us or anyone): the cache counts it, the queue forgets
		// it. A finished pod holds nothing.
		s.queue.Delete(cur)
		if terminal(cur) {
			if old != nil && !terminal(old) && old.Spec.NodeName != "" {
				s.cache.RemovePod(cur)
				s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, ActionType: framework.Delete, Label: "AssignedPodDelete"}, nil)
			}
			return
		}
		if old == nil || old.Spec.NodeName == "" {
			s.cache.AddPod(cur)
			s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, ActionType: framework.Add, Label: "AssignedPodAdd"}, nil)
			return
		}
		s.cache.UpdatePod(cur)
		a := framework.UpdatePodOther
		if !reflect.DeepEqual(old.Labels, cur.Labels) {
			a = framework.UpdatePodLabel
		}
		s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, ActionType: a, Label: "AssignedPodUpdate"}, nil)
		return
	}
	if s.profileFor(cur) == nil || terminal(cur) || cur.DeletionTimestamp != nil {
		s.queue.Delete(cur)
		return
	}
	if s.cache.IsAssumedPod(cur) {
		return // bound by us; the watch has not caught up
	}
	if old == nil {
		s.queue.Add(cur)
	} else {
		s.queue.Update(cur)
	}
}

func (s *Scheduler) onPodDelete(p *v1.Pod) {
	s.queue.Delete(p)
	if p.Spec.NodeName == "" && !s.cache.IsAssumedPod(p) {
		return
	}
	s.cache.RemovePod(p)
	s.queue.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, ActionType: framework.Delete, Label: "AssignedPodDelete"}, nil)
}

// withPriority returns pod with spec.priority resolved from its
// PriorityClass (or the global default class) when the API server did not
// set it. The informer's object is not modified.
func (s *Scheduler) withPriority(pod *v1.Pod) *v1.Pod {
	if pod.Spec.Priority != nil {
		return pod
	}
	var v int32
	if name := pod.Spec.PriorityClassName; name != "" {
		if pc, err := s.pcs.Get(name); err == nil {
			v = pc.Value
		} else if sv, ok := systemPriorityClasses[name]; ok {
			v = sv
		}
	} else if pcs, err := s.pcs.List(labels.Everything()); err == nil {
		for _, pc := range pcs {
			if pc.GlobalDefault {
				v = pc.Value
				break
			}
		}
	}
	c := *pod
	c.Spec.Priority = &v
	return &c
}

// Services implements framework.WorkloadLister.
func (w *workloadLister) Services(ns string) []*v1.Service {
	l, _ := w.services.Services(ns).List(labels.Everything())
	return l
}

// ControllerSelector implements framework.WorkloadLister.
func (w *workloadLister) ControllerSelector(ns string, owner *metav1.OwnerReference) labels.Selector {
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return nil
	}
	switch gv.WithKind(owner.Kind) {
	case v1.SchemeGroupVersion.WithKind("ReplicationController"):
		if rc, err := w.rcs.ReplicationControllers(ns).Get(owner.Name); err == nil && len(rc.Spec.Selector) > 0 {
			return labels.SelectorFromSet(rc.Spec.Selector)
		}
	case schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}:
		if rs, err := w.rss.ReplicaSets(ns).Get(owner.Name); err == nil {
			if sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector); err == nil {
				return sel
			}
		}
	case schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}:
		if ss, err := w.sss.StatefulSets(ns).Get(owner.Name); err == nil {
			if sel, err := metav1.LabelSelectorAsSelector(ss.Spec.Selector); err == nil {
				return sel
			}
		}
	}
	return nil
}
