package admission

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Reader is how a plugin reads the API: the lister of one informer and
// the client for what the cache cannot answer, given once the server's
// informers exist (the plugin's Start) and read by every request.
type Reader[L any] struct {
	mu     sync.Mutex
	lister L
	synced cache.InformerSynced
	client kubernetes.Interface
}

// Set gives the reader its lister, the informer's HasSynced and client.
func (r *Reader[L]) Set(lister L, synced cache.InformerSynced, client kubernetes.Interface) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lister, r.synced, r.client = lister, synced, client
}

// HasSynced reports whether the reader is set and its informer has synced.
func (r *Reader[L]) HasSynced() bool {
	_, _, ok := r.Read()
	return ok
}

// Read is the lister and the client; ok is false until the reader is set
// and its informer has synced.
func (r *Reader[L]) Read() (lister L, client kubernetes.Interface, ok bool) {
	r.mu.Lock()
	lister, synced, client := r.lister, r.synced, r.client
	r.mu.Unlock()
	return lister, client, synced != nil && synced()
}

// Synced is the HasSynced of several informers: a plugin has read the API
// once all of them have.
type Synced []cache.InformerSynced

// HasSynced reports whether every informer has synced.
func (s Synced) HasSynced() bool {
	for _, f := range s {
		if !f() {
			return false
		}
	}
	return true
}

// Namespaces reads namespaces from an informer and, as upstream's plugins
// do, one the informer does not hold yet (it lags a namespace created a
// moment ago) from the API through Client, if set.
type Namespaces struct {
	Lister corelisters.NamespaceLister
	Client kubernetes.Interface
}

// Get is the namespace called name.
func (n Namespaces) Get(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns, err := n.Lister.Get(name)
	if apierrors.IsNotFound(err) && name != "" && n.Client != nil {
		return n.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	}
	return ns, err
}
