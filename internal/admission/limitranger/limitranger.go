package limitranger

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "LimitRanger"

// liveTTL is how long a live look-up of a namespace's LimitRanges (made
// when the informer has none, as it may lag a LimitRange just created)
// is reused, as upstream.
const liveTTL = 30 * time.Second

var (
	pods   = schema.GroupResource{Resource: "pods"}
	claims = schema.GroupResource{Resource: "persistentvolumeclaims"}
)

// Plugin is the LimitRanger admission plugin.
type Plugin struct {
	admission.Reader[corelisters.LimitRangeLister]
	mu   sync.Mutex
	live map[string]liveEntry
}

type liveEntry struct {
	items   []*corev1.LimitRange
	expires time.Time
}

// New is the plugin; call Start before the server serves.
func New() *Plugin { return &Plugin{live: map[string]liveEntry{}} }

// Start reads LimitRanges from f's informer (register before f starts);
// client makes the live look-ups.
func (p *Plugin) Start(f informers.SharedInformerFactory, client kubernetes.Interface) {
	inf := f.Core().V1().LimitRanges()
	p.Set(inf.Lister(), inf.Informer().HasSynced, client)
}

// Plugin is the plugin's place in the chain: pods and claims, created
// or updated (pods' resize subresource too).
func (p *Plugin) Plugin() admission.Plugin {
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{pods, claims},
		Operations: []admission.Operation{admission.Create, admission.Update}, Subresources: []string{"resize"},
		Mutate: p.Mutate, Validate: p.Validate}
}

// applies is upstream's rule: pods on create and resize, claims on create
// and update; nothing being deleted.
func applies(a *admission.Attributes) bool {
	gr := a.GroupResource()
	switch {
	case a.Subresource == "resize":
		if gr != pods || a.Operation != admission.Update {
			return false
		}
	case a.Subresource != "":
		return false
	case gr == pods && a.Operation == admission.Update:
		return false
	}
	if a.OldObject != nil {
		if m, err := meta.Accessor(a.OldObject); err == nil && m.GetDeletionTimestamp() != nil {
			return false
		}
	}
	return true
}

// Mutate fills in a pod's containers' missing requests and limits.
func (p *Plugin) Mutate(ctx context.Context, a *admission.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || !applies(a) {
		return nil
	}
	ranges, err := p.limitRanges(ctx, a)
	if err != nil {
		return err
	}
	for _, lr := range ranges {
		applyDefaults(lr, pod)
	}
	return nil
}

// Validate refuses a pod or claim outside a LimitRange's bounds.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	if !applies(a) {
		return nil
	}
	var check func(*corev1.LimitRange) error
	switch o := a.Object.(type) {
	case *corev1.Pod:
		check = func(lr *corev1.LimitRange) error { return validatePod(lr, o) }
	case *corev1.PersistentVolumeClaim:
		check = func(lr *corev1.LimitRange) error { return validateClaim(lr, o) }
	default:
		return nil
	}
	ranges, err := p.limitRanges(ctx, a)
	if err != nil {
		return err
	}
	for _, lr := range ranges {
		if err := check(lr); err != nil {
			return admission.Forbidden(a, err)
		}
	}
	return nil
}

// limitRanges are the namespace's LimitRanges: the informer's, or, when it
// has none, a live list reused for liveTTL.
func (p *Plugin) limitRanges(ctx context.Context, a *admission.Attributes) ([]*corev1.LimitRange, error) {
	lister, client, ok := p.Read()
	if !ok {
		return nil, apierrors.NewServiceUnavailable("the LimitRanger admission plugin has not read the LimitRanges yet")
	}
	items, err := lister.LimitRanges(a.Namespace).List(labels.Everything())
	if err != nil {
		return nil, admission.Forbidden(a, fmt.Errorf("unable to %s %v at this time because there was an error enforcing limit ranges", a.Operation, a.Resource))
	}
	if len(items) > 0 {
		return items, nil
	}
	now := time.Now()
	p.mu.Lock()
	e, ok := p.live[a.Namespace]
	p.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.items, nil
	}
	list, err := client.CoreV1().LimitRanges(a.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, admission.Forbidden(a, err)
	}
	e = liveEntry{expires: now.Add(liveTTL)}
	for i := range list.Items {
		e.items = append(e.items, &list.Items[i])
	}
	p.mu.Lock()
	for ns, old := range p.live { // drop the expired, so the map stays small
		if now.After(old.expires) {
			delete(p.live, ns)
		}
	}
	p.live[a.Namespace] = e
	p.mu.Unlock()
	return e.items, nil
}
