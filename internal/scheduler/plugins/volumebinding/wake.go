package volumebinding

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/reconcile"
)

// wakers lets PreBind's waits sleep until one of the objects they wait
// on changes in the informers, rather than polling every claim of every
// waiting pod: with a thousand pods binding at once, polling was a
// thousand cache looks per interval. Keys are "pvc/<namespace>/<name>"
// and "pv/<name>".
type wakers struct {
	mu    sync.Mutex
	byKey map[string][]chan struct{}
}

func wakeClaimKey(namespace, name string) string { return "pvc/" + namespace + "/" + name }
func wakeVolumeKey(name string) string           { return "pv/" + name }

// add returns a channel that receives when an object of keys changes;
// remove it with the same keys when done.
func (w *wakers) add(keys []string) chan struct{} {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byKey == nil {
		w.byKey = map[string][]chan struct{}{}
	}
	for _, k := range keys {
		w.byKey[k] = append(w.byKey[k], ch)
	}
	return ch
}

func (w *wakers) remove(keys []string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		list := w.byKey[k]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(w.byKey, k)
		} else {
			w.byKey[k] = list
		}
	}
}

// wake tells the waits on key to look again (a wait already told is not
// told twice).
func (w *wakers) wake(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.byKey[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// watch wakes the waits on the claims and volumes the informers see
// change.
func (w *wakers) watch(claims, volumes cache.SharedIndexInformer) error {
	onClaim := func(obj any) {
		if c, ok := reconcile.DeletedObject[*v1.PersistentVolumeClaim](obj); ok {
			w.wake(wakeClaimKey(c.Namespace, c.Name))
		}
	}
	onVolume := func(obj any) {
		if pv, ok := reconcile.DeletedObject[*v1.PersistentVolume](obj); ok {
			w.wake(wakeVolumeKey(pv.Name))
		}
	}
	if _, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onClaim,
		UpdateFunc: func(_, obj any) { onClaim(obj) }, DeleteFunc: onClaim}); err != nil {
		return err
	}
	_, err := volumes.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onVolume,
		UpdateFunc: func(_, obj any) { onVolume(obj) }, DeleteFunc: onVolume})
	return err
}

// keys are the objects a wait for written looks at.
func (v *podVolumes) keys() []string {
	var keys []string
	for _, b := range v.static {
		keys = append(keys, wakeVolumeKey(b.pv.Name), wakeClaimKey(b.claim.Namespace, b.claim.Name))
	}
	for _, c := range v.provision {
		keys = append(keys, wakeClaimKey(c.Namespace, c.Name))
		if c.Spec.VolumeName != "" {
			keys = append(keys, wakeVolumeKey(c.Spec.VolumeName))
		}
	}
	return keys
}
