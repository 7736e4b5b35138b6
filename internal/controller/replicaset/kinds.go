package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// workload is a ReplicaSet or a ReplicationController seen through what the
// two share. It points into an object from the informer cache: read only.
type workload struct {
	obj      object
	replicas int32
	// selector is nil when the object's selector does not parse; such a
	// workload is left alone.
	selector        labels.Selector
	template        *corev1.PodTemplateSpec
	minReadySeconds int32
	status          status
}

func (w *workload) key() string { return w.obj.GetNamespace() + "/" + w.obj.GetName() }

// object is a typed API object.
type object interface {
	metav1.Object
	runtime.Object
}

// status is the status both kinds have. TerminatingReplicas is nil for a
// ReplicationController, which has no such field.
type status struct {
	Replicas             int32
	FullyLabeledReplicas int32
	ReadyReplicas        int32
	AvailableReplicas    int32
	TerminatingReplicas  *int32
	ObservedGeneration   int64
	Conditions           []condition
}

// condition is a ReplicaSetCondition or a ReplicationControllerCondition.
type condition struct {
	Type               string
	Status             corev1.ConditionStatus
	LastTransitionTime metav1.Time
	Reason             string
	Message            string
}

// kind adapts one resource to the generic loop.
type kind interface {
	gvk() schema.GroupVersionKind
	// component is the source of the events the loop records.
	component() string
	// tracksTerminating: the status has terminatingReplicas.
	tracksTerminating() bool
	informer(f informers.SharedInformerFactory) cache.SharedIndexInformer
	// newObject is an empty object of the kind.
	newObject() runtime.Object
	// fromObject converts an informer object; false if it is not this kind.
	fromObject(obj any) (*workload, bool)
	// get and list read the informer cache.
	get(namespace, name string) (*workload, error)
	list(namespace string) ([]*workload, error)
	// getLive reads the object from the API server.
	getLive(ctx context.Context, namespace, name string) (*workload, error)
	// updateStatus writes st as the object's status.
	updateStatus(ctx context.Context, w *workload, st status) (*workload, error)
}

// ---- ReplicaSet ----

type replicaSetKind struct {
	client kubernetes.Interface
	inf    cache.SharedIndexInformer
}

func (replicaSetKind) gvk() schema.GroupVersionKind {
	return appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
}
func (replicaSetKind) component() string         { return ReplicaSetComponent }
func (replicaSetKind) newObject() runtime.Object { return &appsv1.ReplicaSet{} }
func (replicaSetKind) tracksTerminating() bool   { return true }

func (k *replicaSetKind) informer(f informers.SharedInformerFactory) cache.SharedIndexInformer {
	k.inf = f.Apps().V1().ReplicaSets().Informer()
	return k.inf
}

func (replicaSetKind) fromObject(obj any) (*workload, bool) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return nil, false
	}
	return fromReplicaSet(rs), true
}

func fromReplicaSet(rs *appsv1.ReplicaSet) *workload {
	w := &workload{obj: rs, replicas: deref(rs.Spec.Replicas, 1), template: &rs.Spec.Template,
		minReadySeconds: rs.Spec.MinReadySeconds}
	if rs.Spec.Selector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector); err == nil {
			w.selector = sel
		}
	}
	s := rs.Status
	w.status = status{Replicas: s.Replicas, FullyLabeledReplicas: s.FullyLabeledReplicas, ReadyReplicas: s.ReadyReplicas,
		AvailableReplicas: s.AvailableReplicas, TerminatingReplicas: s.TerminatingReplicas, ObservedGeneration: s.ObservedGeneration}
	for _, c := range s.Conditions {
		w.status.Conditions = append(w.status.Conditions, condition{Type: string(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	return w
}

func (k *replicaSetKind) get(namespace, name string) (*workload, error) {
	obj, exists, err := k.inf.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, notFound(appsv1.Resource("replicasets"), name)
	}
	return fromReplicaSet(obj.(*appsv1.ReplicaSet)), nil
}

func (k *replicaSetKind) list(namespace string) ([]*workload, error) {
	objs, err := k.inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]*workload, 0, len(objs))
	for _, o := range objs {
		out = append(out, fromReplicaSet(o.(*appsv1.ReplicaSet)))
	}
	return out, nil
}

func (k *replicaSetKind) getLive(ctx context.Context, namespace, name string) (*workload, error) {
	rs, err := k.client.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return fromReplicaSet(rs), nil
}

func (k *replicaSetKind) updateStatus(ctx context.Context, w *workload, st status) (*workload, error) {
	rs := w.obj.(*appsv1.ReplicaSet).DeepCopy()
	rs.Status = appsv1.ReplicaSetStatus{Replicas: st.Replicas, FullyLabeledReplicas: st.FullyLabeledReplicas,
		ReadyReplicas: st.ReadyReplicas, AvailableReplicas: st.AvailableReplicas, TerminatingReplicas: st.TerminatingReplicas,
		ObservedGeneration: st.ObservedGeneration}
	for _, c := range st.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetConditionType(c.Type),
			Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	out, err := k.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return fromReplicaSet(out), nil
}

// ---- ReplicationController ----

type replicationControllerKind struct {
	client kubernetes.Interface
	inf    cache.SharedIndexInformer
}

func (replicationControllerKind) gvk() schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind("ReplicationController")
}
func (replicationControllerKind) component() string         { return ReplicationControllerComponent }
func (replicationControllerKind) newObject() runtime.Object { return &corev1.ReplicationController{} }
func (replicationControllerKind) tracksTerminating() bool   { return false }

func (k *replicationControllerKind) informer(f informers.SharedInformerFactory) cache.SharedIndexInformer {
	k.inf = f.Core().V1().ReplicationControllers().Informer()
	return k.inf
}

func (replicationControllerKind) fromObject(obj any) (*workload, bool) {
	rc, ok := obj.(*corev1.ReplicationController)
	if !ok {
		return nil, false
	}
	return fromReplicationController(rc), true
}

func fromReplicationController(rc *corev1.ReplicationController) *workload {
	w := &workload{obj: rc, replicas: deref(rc.Spec.Replicas, 1), template: rc.Spec.Template,
		minReadySeconds: rc.Spec.MinReadySeconds}
	// The API server defaults an empty selector to the template's labels.
	w.selector = labels.SelectorFromValidatedSet(labels.Set(rc.Spec.Selector))
	s := rc.Status
	w.status = status{Replicas: s.Replicas, FullyLabeledReplicas: s.FullyLabeledReplicas, ReadyReplicas: s.ReadyReplicas,
		AvailableReplicas: s.AvailableReplicas, ObservedGeneration: s.ObservedGeneration}
	for _, c := range s.Conditions {
		w.status.Conditions = append(w.status.Conditions, condition{Type: string(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	return w
}

func (k *replicationControllerKind) get(namespace, name string) (*workload, error) {
	obj, exists, err := k.inf.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, notFound(corev1.Resource("replicationcontrollers"), name)
	}
	return fromReplicationController(obj.(*corev1.ReplicationController)), nil
}

func (k *replicationControllerKind) list(namespace string) ([]*workload, error) {
	objs, err := k.inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]*workload, 0, len(objs))
	for _, o := range objs {
		out = append(out, fromReplicationController(o.(*corev1.ReplicationController)))
	}
	return out, nil
}

func (k *replicationControllerKind) getLive(ctx context.Context, namespace, name string) (*workload, error) {
	rc, err := k.client.CoreV1().ReplicationControllers(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return fromReplicationController(rc), nil
}

func (k *replicationControllerKind) updateStatus(ctx context.Context, w *workload, st status) (*workload, error) {
	rc := w.obj.(*corev1.ReplicationController).DeepCopy()
	rc.Status = corev1.ReplicationControllerStatus{Replicas: st.Replicas, FullyLabeledReplicas: st.FullyLabeledReplicas,
		ReadyReplicas: st.ReadyReplicas, AvailableReplicas: st.AvailableReplicas, ObservedGeneration: st.ObservedGeneration}
	for _, c := range st.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	out, err := k.client.CoreV1().ReplicationControllers(rc.Namespace).UpdateStatus(ctx, rc, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return fromReplicationController(out), nil
}

func notFound(gr schema.GroupResource, name string) error { return apierrors.NewNotFound(gr, name) }

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
