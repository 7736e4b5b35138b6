package reconcile

import "k8s.io/client-go/tools/cache"

// DeletedObject is the object of an informer's delete event: the object
// itself or, when the informer missed the deletion and found out by
// relisting, the last state it knew from a cache.DeletedFinalStateUnknown
// tombstone. ok is false when obj is neither a T nor a tombstone of one.
func DeletedObject[T any](obj any) (o T, ok bool) {
	if t, isTombstone := obj.(cache.DeletedFinalStateUnknown); isTombstone {
		obj = t.Obj
	}
	o, ok = obj.(T)
	return o, ok
}
