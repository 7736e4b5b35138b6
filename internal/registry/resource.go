package registry

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Resource describes one served resource (e.g. pods in core/v1).
type Resource struct {
	// Kind is the group, version and kind of one object; ListKind is Kind+"List".
	Kind schema.GroupVersionKind
	// Plural is the URL segment ("pods"); Singular the singular name ("pod").
	Plural, Singular string
	ShortNames       []string
	// Categories such as "all" (used by `kubectl get all`).
	Categories []string
	Namespaced bool
	// Subresources served besides the main resource, e.g. "status", "scale",
	// "binding", "eviction", "ephemeralcontainers", "finalize", "token".
	// How each is served: "status" by the API server's generic handlers
	// (with the Strategy's status rules); "scale" by the generic handlers
	// through the resource's Scale; those in Parts by the generic get,
	// update and patch of one part of the object; those in Handlers by the
	// resource's own handler.
	Subresources []string
	// Scale maps the scale subresource onto the resource's objects; set
	// when Subresources has "scale".
	Scale *Scale
	// Parts are the subresources that write one part of the object, by
	// name; "status" needs an entry only when its Merge is not the
	// default one.
	Parts map[string]Part
	// Handlers serve the subresources the resource answers itself, by name.
	Handlers map[string]Handler
	// Handler serves every request of an Ephemeral resource that answers
	// for itself (metrics.k8s.io); nil: the API server's reviews.
	Handler *Handler
	// Deprecated is the warning every request of the resource gets, as
	// upstream's for a deprecated API ("v1 ComponentStatus is deprecated
	// in v1.19+"); "" for none.
	Deprecated string
	// Verbs the main resource allows; nil means all of create, delete,
	// deletecollection, get, list, patch, update, watch.
	Verbs []string
	// StoredAs, if set, keeps this resource's objects as another resource's:
	// both APIs then show the same objects (events.k8s.io/v1 events are
	// core/v1 events in storage, as upstream).
	StoredAs *StoredAs
	// CreateAs makes an Ephemeral, create-only resource the other door to
	// a subresource of the same group-version: a create of it is a create
	// of that subresource of the object the body's metadata.name names
	// (core/v1 bindings are pods/binding, as upstream).
	CreateAs *SubresourceRef
	// Ephemeral resources are not stored: the API server answers a create
	// of access and token reviews itself, and the rest with their Handler
	// (metrics.k8s.io, from the node agents' usage summaries).
	Ephemeral bool
	// TracksGeneration: metadata.generation starts at 1 and bumps on every
	// change outside metadata and status.
	TracksGeneration bool
	// ReturnDeletedObject: a delete that removes the object at once answers
	// with the object as it was, instead of a Status (upstream's
	// ReturnDeletedObject stores: pods, services, storage classes...).
	ReturnDeletedObject bool
	// Strategy supplies the per-resource rules; nil fields mean "nothing to do".
	Strategy Strategy
}

// SubresourceRef names a subresource of a resource (its plural).
type SubresourceRef struct{ Resource, Subresource string }

// Strategy holds the rules one resource adds to the generic handling (which
// already validates ObjectMeta, keeps status out of main-resource writes and
// spec out of /status writes, and sets generation).
// Every function receives typed objects of the resource's Go type.
type Strategy struct {
	// Default sets unset fields to upstream's defaults. It runs on every
	// decoded create/update/patch body, before validation.
	Default func(obj runtime.Object)
	// PrepareForCreate clears or sets fields the server owns on create
	// (e.g. a pod's status phase Pending).
	PrepareForCreate func(ctx context.Context, obj runtime.Object)
	// PrepareForUpdate adjusts a main-resource update given the stored object.
	PrepareForUpdate func(ctx context.Context, obj, old runtime.Object)
	// ValidateName checks metadata.name; nil means a DNS-1123 subdomain.
	// It returns upstream's messages (see apimachinery's path/validation helpers).
	ValidateName func(name string, prefix bool) []string
	// Validate checks a new object (beyond ObjectMeta).
	Validate func(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks an update (immutable fields and the like).
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// ValidateUpdateOnly: an update is checked by ValidateUpdate alone
	// (besides ObjectMeta), not by Validate too. For resources whose update
	// rules differ from their create rules (CRDs ratchet on the stored
	// object, custom resources' CEL rules see oldSelf).
	ValidateUpdateOnly bool
	// ValidateStatusUpdate checks a /status update.
	ValidateStatusUpdate func(obj, old runtime.Object) field.ErrorList
	// GracePeriod says how long a delete of obj waits for the object to
	// stop (a pod bound to a node: until its kubelet deletes it for good);
	// ok false: the delete proceeds at once.
	GracePeriod func(obj runtime.Object, opts *metav1.DeleteOptions) (grace int64, ok bool)
	// OwnFinalizers reports whether obj waits for finalizers of its own
	// besides metadata.finalizers (a namespace's spec.finalizers).
	OwnFinalizers func(obj runtime.Object) bool
	// PrepareForDelete marks an object whose deletion begins and waits for
	// finalizers (a namespace's phase becomes Terminating).
	PrepareForDelete func(obj runtime.Object)
	// Warnings are what a create (old nil) or an update of the object
	// tells the client besides succeeding, as upstream's WarningsOnCreate
	// and WarningsOnUpdate: sent as Warning headers, kubectl prints them.
	Warnings func(obj, old runtime.Object) []string
	// SelectableFields returns the fields usable in a fieldSelector beyond
	// metadata.name and metadata.namespace (e.g. pods' spec.nodeName).
	SelectableFields func(obj runtime.Object) fields.Set
	// Table prints the rows of `kubectl get` (see package printers).
	Table *TableSpec
}

// Part is a subresource that writes one part of the object (pods'
// ephemeralcontainers and resize, a namespace's finalize, a CSR's approval).
type Part struct {
	// Merge returns the stored object old with obj's part copied in; nil:
	// what a /status write may change (the status, and metadata other
	// than labels).
	Merge func(obj, old runtime.Object) runtime.Object
	// UpdateOnly parts answer only PUT; get and patch are 405.
	UpdateOnly bool
	// Validate checks a write of the part (the merged object against the
	// stored one); nil: nothing beyond ObjectMeta.
	Validate func(obj, old runtime.Object) field.ErrorList
}

// TableSpec is the server-side printing of one kind.
type TableSpec struct {
	Columns []metav1.TableColumnDefinition
	// Cells returns one row's cells, in Columns order, for obj. Columns with
	// Priority 1 are shown by kubectl only with -o wide; they are always sent.
	Cells func(obj runtime.Object) []interface{}
	// Less, if set, orders a list's rows (upstream lists FlowSchemas by
	// matching precedence); nil: the list's order.
	Less func(a, b runtime.Object) bool
}

// StoredAs names the resource whose storage another resource shares, and
// converts between the two kinds.
type StoredAs struct {
	// Kind and Plural of the stored resource (e.g. core/v1 Event, "events").
	Kind   schema.GroupVersionKind
	Plural string
	// ToStorage converts an object of this resource to the stored kind;
	// FromStorage converts back. Both return new objects.
	ToStorage, FromStorage func(runtime.Object) runtime.Object
}
