package registry

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/auth"
)

// Handler serves what a resource answers itself rather than through the
// API server's generic verbs: one of its subresources (pods/binding,
// pods/log, nodes/proxy, serviceaccounts/token…), or every request of a
// resource that is not stored (metrics.k8s.io).
type Handler struct {
	// Serve answers one request. An error is written as a Status by the
	// API server; a handler that has written its answer returns nil.
	Serve func(rq *Request) error
	// OwnForm, for a subresource: the handler writes its answer in a form
	// of its own, streamed or proxied from elsewhere (a node agent, a pod,
	// a Service's endpoint), so the server neither checks the request's
	// Accept header nor counts the request (which may last) against the
	// in-flight limit. A resource's own Handler always negotiates itself
	// (API.Negotiate), if it answers with an object.
	OwnForm bool
	// KeepsGeneration: the spec changes this subresource's updates
	// (API.Update) make do not bump metadata.generation, as upstream's
	// pods/binding, which writes storage directly, does not.
	KeepsGeneration bool
}

// Request is one request handed to a Handler.
type Request struct {
	W http.ResponseWriter
	R *http.Request
	// Verb is the API verb (get, list, create, update, patch…).
	Verb string
	// Resource is the group, version and plural the path names;
	// Subresource is "" for a request to the resource itself.
	Resource    schema.GroupVersionResource
	Subresource string
	// Namespace and Name are as in the path (a proxy's name may be
	// "name:port" or "scheme:name:port").
	Namespace, Name string
	// API is what the API server lends the handler for this request.
	API API
}

// ListOptions select the objects API.List returns.
type ListOptions struct {
	Labels labels.Selector
	Fields fields.Selector
	// ResourceVersion "" reads the latest (consistent), "0" what the
	// watch cache holds.
	ResourceVersion string
}

// API is what the API server lends a Handler: reads of any built-in
// resource, the generic write paths for the request's own object, and
// the request's codec, authorization, clock and clients.
type API interface {
	// Get reads one object of a built-in resource (a consistent read) and
	// returns a copy; errors are API errors (NotFound…).
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
	// List lists the objects of a built-in resource in namespace ("": all)
	// that match opts.
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts ListOptions) ([]runtime.Object, error)
	// ReadBody reads the request's body (413 beyond the size limit).
	ReadBody() ([]byte, error)
	// Decode decodes body, in the request's Content-Type (JSON, YAML or
	// protobuf), as an object of gvk into into, ignoring unknown fields.
	Decode(body []byte, gvk schema.GroupVersionKind, into runtime.Object) (runtime.Object, error)
	// DecodeJSON decodes body as JSON whatever the Content-Type.
	DecodeJSON(body []byte, gvk schema.GroupVersionKind, into runtime.Object) (runtime.Object, error)
	// Update writes the request's object through the generic update path
	// as a write of the request's subresource (ObjectMeta rules, the
	// resource's validation, compare-and-swap retried while mutate's
	// object carries no resourceVersion), recording manager in
	// managedFields. mutate gets a copy of the stored object and returns
	// the new one. Admission does not run: the handler admits its own
	// request (AdmitCreate) first.
	Update(manager string, mutate func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error)
	// UpdateOther writes an object of a built-in resource other than the
	// request's (pods/eviction's PodDisruptionBudget status) through the
	// generic update path as a write of its subresource ("status"…), as
	// manager, without admission and never as a dry run: mutate gets a
	// copy of the stored object, and a resourceVersion in what it returns
	// is a precondition (409 Conflict if the object changed since).
	UpdateOther(ctx context.Context, gvr schema.GroupVersionResource, subresource, namespace, name, manager string,
		mutate func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error)
	// Delete deletes the request's object as a DELETE of it would
	// (grace periods, finalizers, preconditions, dry run), without
	// admission: the handler admits its own request first.
	Delete(opts *metav1.DeleteOptions) error
	// AdmitCreate runs the admission chain (both phases) on a create of
	// the request's subresource that the handler serves itself
	// (pods/binding, pods/eviction, serviceaccounts/token): obj is the
	// request's object (a Binding, an Eviction, a TokenRequest), which a
	// mutating plugin may change in place. Dry runs are admitted too.
	AdmitCreate(obj runtime.Object) error
	// AdmitConnect runs the admission chain on a connect (pods/exec,
	// attach, portforward, proxy; services and nodes proxy): opts are
	// the connect options (PodExecOptions…).
	AdmitConnect(opts runtime.Object) error
	// Negotiate picks the form of the answer from the Accept header (406
	// if none fits). The server has done so before a subresource's handler
	// runs (unless OwnForm); a resource's own Handler calls it before
	// WriteObject, at the point its checks put it.
	Negotiate() error
	// WriteObject writes obj in the form negotiated.
	WriteObject(code int, obj runtime.Object)
	// WriteError writes err as a Status (for errors met once a proxied
	// answer has begun).
	WriteError(err error)
	// WantsTable reports whether the request asked for a Table.
	WantsTable() bool
	// Authorize checks that the request's user may also do verb on the
	// request's resource and subresource; 403 if not.
	Authorize(verb string) error
	// Now is the server's clock.
	Now() time.Time
	Logger() *slog.Logger
	// KubeletClient reaches node agents' APIs over HTTPS with the API
	// server's client certificate; nil when there is none.
	KubeletClient() *http.Client
	// Authenticator and Authorizer are the server's own (for reviews);
	// Authenticator may be nil.
	Authenticator() auth.Authenticator
	Authorizer() auth.Authorizer
	// ServiceAccounts issues service-account tokens; nil when the server
	// has no signing key.
	ServiceAccounts() *auth.ServiceAccountTokens
	// Components are the parts of the control plane whose health the
	// server reports (/api/v1/componentstatuses).
	Components() []ComponentCheck
}

// ComponentCheck is one part of the control plane whose health the API
// server reports as a ComponentStatus: the scheduler, the controller
// manager, each etcd member.
type ComponentCheck struct {
	Name string
	// Probe looks at the component now, as upstream's probes do: healthy
	// (ConditionTrue, with a message such as "ok"), unhealthy
	// (ConditionFalse, with what was seen and the error met) or unknown.
	Probe func(ctx context.Context, api API) (status corev1.ConditionStatus, message string, err error)
}

// NewStatusError is an API error of any code and reason, for answers
// apimachinery has no constructor of (501 NotImplemented, 503…).
func NewStatusError(code int, reason metav1.StatusReason, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg,
	}}
}
