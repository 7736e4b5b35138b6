package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/api/quota"
)

// Name is the plugin's name, as upstream's.
const Name = "ResourceQuota"

// maxAttempts bounds how often one write re-reads a quota another server
// changed under it.
const maxAttempts = 8

// ignored are the resources quota never counts, as upstream's default
// configuration.
var ignored = map[schema.GroupResource]bool{
	{Resource: "events"}:                         true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// Plugin is the ResourceQuota admission plugin. Start gives it its quotas
// and client; until then (and until the informer has synced) it admits
// nothing it would have to charge.
type Plugin struct {
	// Now is the clock (a pod past its deletion grace period no longer
	// counts); defaults to time.Now.
	Now func() time.Time

	admission.Reader[corelisters.ResourceQuotaLister]
	// namespaces serializes the charges of one namespace.
	namespaces keyedMutex
	// written holds each quota as this server last wrote it, newer than
	// the informer's copy until the watch event arrives.
	written sync.Map // namespace/name -> *corev1.ResourceQuota
}

// New is the plugin; call Start before the server serves.
func New() *Plugin { return &Plugin{Now: time.Now} }

// Start reads quotas from f's ResourceQuota informer (register before f
// starts) and writes their status with client.
func (p *Plugin) Start(f informers.SharedInformerFactory, client kubernetes.Interface) {
	inf := f.Core().V1().ResourceQuotas()
	p.Set(inf.Lister(), inf.Informer().HasSynced, client)
}

// Plugin is the plugin's place in the chain: creates and updates of every
// resource and subresource (the evaluators pick what counts).
func (p *Plugin) Plugin() admission.Plugin {
	return admission.Plugin{Name: Name, Operations: []admission.Operation{admission.Create, admission.Update},
		Subresources: []string{"*"}, Validate: p.Validate}
}

// Validate charges the write against its namespace's quotas.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	gr := a.GroupResource()
	if a.Namespace == "" || ignored[gr] || a.Object == nil {
		return nil
	}
	e := quota.For(gr)
	if !e.Handles(string(a.Operation), a.Subresource, a.Object, a.OldObject) {
		return nil
	}
	lister, client, ok := p.Read()
	if !ok {
		return apierrors.NewServiceUnavailable("the ResourceQuota admission plugin has not read the quotas yet")
	}
	quotas, err := lister.ResourceQuotas(a.Namespace).List(labels.Everything())
	if err != nil || len(quotas) == 0 {
		return err
	}
	unlock := p.namespaces.lock(a.Namespace)
	defer unlock()
	pending := make([]corev1.ResourceQuota, 0, len(quotas))
	for _, q := range quotas {
		pending = append(pending, *p.newest(q))
	}
	r := request{op: string(a.Operation), subresource: a.Subresource, obj: a.Object, old: a.OldObject, now: p.Now()}
	for range maxAttempts {
		used, err := check(pending, r, e)
		var refused refusal
		if errors.As(err, &refused) {
			return admission.Forbidden(a, refused.error)
		}
		if err != nil || len(used) == 0 || a.DryRun {
			return err
		}
		// Write each changed quota; those another server changed first are
		// read again and checked again, the others are charged.
		var stale []corev1.ResourceQuota
		for i, u := range used {
			q := pending[i].DeepCopy()
			q.Status.Used = u
			updated, err := client.CoreV1().ResourceQuotas(q.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{})
			switch {
			case err == nil:
				p.written.Store(q.Namespace+"/"+q.Name, updated)
			case apierrors.IsConflict(err):
				fresh, err := client.CoreV1().ResourceQuotas(q.Namespace).Get(ctx, q.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					continue
				}
				if err != nil {
					return err
				}
				stale = append(stale, *fresh)
			case apierrors.IsNotFound(err):
			default:
				return fmt.Errorf("recording the usage of quota %s: %w", q.Name, err)
			}
		}
		if len(stale) == 0 {
			return nil
		}
		pending = stale
	}
	return apierrors.NewInternalError(errors.New("resource quota evaluation timed out"))
}

// newest is q, or the copy this server wrote last if that is newer.
func (p *Plugin) newest(q *corev1.ResourceQuota) *corev1.ResourceQuota {
	key := q.Namespace + "/" + q.Name
	v, ok := p.written.Load(key)
	if !ok {
		return q
	}
	w := v.(*corev1.ResourceQuota)
	if w.UID == q.UID && revision(w) > revision(q) {
		return w
	}
	p.written.CompareAndDelete(key, v)
	return q
}

func revision(q *corev1.ResourceQuota) uint64 {
	n, _ := strconv.ParseUint(q.ResourceVersion, 10, 64)
	return n
}

// keyedMutex is one mutex per key, dropped when no one holds or waits
// for it.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*refMutex
}

type refMutex struct {
	sync.Mutex
	refs int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*refMutex{}
	}
	m := k.locks[key]
	if m == nil {
		m = &refMutex{}
		k.locks[key] = m
	}
	m.refs++
	k.mu.Unlock()
	m.Lock()
	return func() {
		m.Unlock()
		k.mu.Lock()
		if m.refs--; m.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
