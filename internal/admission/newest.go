package admission

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// NewestOf is, of the objects of type T in objs that match accepts, the
// one created last, the first by name among those created at once; the
// zero T when none is. It is how upstream's defaulting plugins choose
// among several classes annotated as the default.
func NewestOf[T interface {
	runtime.Object
	metav1.Object
}](objs []runtime.Object, accepts func(T) bool) T {
	var matching []T
	for _, o := range objs {
		if t, ok := o.(T); ok && accepts(t) {
			matching = append(matching, t)
		}
	}
	var zero T
	if len(matching) == 0 {
		return zero
	}
	return slices.MinFunc(matching, func(a, b T) int {
		ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
		return cmp.Or(cmp.Compare(tb.UnixNano(), ta.UnixNano()), cmp.Compare(a.GetName(), b.GetName()))
	})
}
