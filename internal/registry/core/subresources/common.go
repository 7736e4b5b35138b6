package subresources

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

var nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")

// node reads a node.
func node(ctx context.Context, api registry.API, name string) (*corev1.Node, error) {
	obj, err := api.Get(ctx, nodesGVR, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Node), nil
}

// kubeletTransport is the transport of the client for node agents; its TLS
// configuration (the API server's client certificate, the kubelet-serving
// CA) is also used to dial upgraded connections.
func kubeletTransport(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// statusResponder writes errors met while setting up a proxied
// connection as Status objects.
type statusResponder struct{ api registry.API }

func (sr statusResponder) Error(_ http.ResponseWriter, _ *http.Request, err error) {
	sr.api.WriteError(err)
}

// createBody reads the body of a create, the only verb binding, eviction
// and token requests take.
func createBody(rq *registry.Request) ([]byte, error) {
	if rq.Verb != "create" {
		return nil, methodNotAllowed(rq)
	}
	return rq.API.ReadBody()
}

// created is the Status a binding or eviction answers with.
func created() *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated}
}

func badRequest(format string, args ...interface{}) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

func methodNotAllowed(rq *registry.Request) error {
	return apierrors.NewMethodNotSupported(rq.Resource.GroupResource(), rq.R.Method)
}

func notImplemented(msg string) error {
	return registry.NewStatusError(http.StatusNotImplemented, "NotImplemented", msg)
}

func fieldErrors(path string, value interface{}, msg string) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath(path), value, msg)}
}
