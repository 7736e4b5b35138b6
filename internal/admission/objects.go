package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Objects is how plugins read other API objects: the API server's own
// storage, with no request, authorization or admission of their own.
type Objects interface {
	// Get reads one object of a built-in resource (a consistent read) and
	// returns a copy; errors are API errors (NotFound…).
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
	// List lists the objects of a built-in resource in namespace ("": all)
	// as the watch cache holds them: shared, not to be changed.
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error)
}
