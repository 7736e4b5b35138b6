package defaultclass

import (
	"cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Newest is, of the items isDefault accepts, the one created last, the
// first by name among those created at once; the zero T when none is.
func Newest[T metav1.Object](items []T, isDefault func(T) bool) T {
	var best T
	found := false
	for _, it := range items {
		if !isDefault(it) {
			continue
		}
		if !found || newer(it, best) {
			best, found = it, true
		}
	}
	return best
}

// Of is Newest over the objects of type T among objs.
func Of[T interface {
	runtime.Object
	metav1.Object
}](objs []runtime.Object, isDefault func(T) bool) T {
	items := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			items = append(items, t)
		}
	}
	return Newest(items, isDefault)
}

func newer(a, b metav1.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	return cmp.Or(cmp.Compare(tb.UnixNano(), ta.UnixNano()), cmp.Compare(a.GetName(), b.GetName())) < 0
}
