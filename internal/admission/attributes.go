package admission

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/auth"
)

// Operation is what a request does, as upstream's admission.Operation.
type Operation string

// The operations admission sees.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Attributes describe one request as admission sees it (upstream's
// admission.Attributes as a plain struct).
type Attributes struct {
	Operation Operation
	// Kind is the kind of Object (of OldObject on a DELETE; of the
	// options, e.g. PodExecOptions, on a CONNECT).
	Kind schema.GroupVersionKind
	// Resource is the resource at the version the request used.
	Resource    schema.GroupVersionResource
	Subresource string
	Namespace   string
	// Name is the object's name; empty on a create under generateName.
	Name string
	// Object is the object being written: new on CREATE and UPDATE, nil
	// on DELETE, the connect options on CONNECT. Mutating plugins may
	// change it in place (or replace it); validating plugins must not.
	Object runtime.Object
	// OldObject is the stored object on UPDATE and DELETE.
	OldObject runtime.Object
	// Options are the request's CreateOptions, UpdateOptions or
	// DeleteOptions (may be nil).
	Options runtime.Object
	DryRun  bool
	// User is who is asking (nil only for requests made in-process with
	// no identity).
	User *auth.User

	mu           sync.Mutex
	warnings     []string
	annotations  map[string]string
	reinvocation reinvocation
}

// AddWarning records a warning returned to the client in a Warning header.
func (a *Attributes) AddWarning(msg string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.warnings {
		if w == msg {
			return
		}
	}
	a.warnings = append(a.warnings, msg)
}

// Warnings are the warnings recorded so far, in order.
func (a *Attributes) Warnings() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.warnings...)
}

// AddAnnotation records an audit annotation (key "plugin.name/key").
func (a *Attributes) AddAnnotation(key, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.annotations == nil {
		a.annotations = map[string]string{}
	}
	a.annotations[key] = value
}

// Annotations are the audit annotations recorded so far.
func (a *Attributes) Annotations() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]string, len(a.annotations))
	for k, v := range a.annotations {
		out[k] = v
	}
	return out
}

// GroupResource is the request's resource without its version.
func (a *Attributes) GroupResource() schema.GroupResource { return a.Resource.GroupResource() }

// Forbidden wraps a plugin's refusal as upstream's admission.NewForbidden
// does: an API status error passes through unchanged; any other error
// becomes 403 `<resource> "<name>" is forbidden: <err>`, naming the object
// by its name, else its generateName, else "Unknown".
func Forbidden(a *Attributes, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return apierrors.NewForbidden(a.GroupResource(), a.objectName(), err)
}

func (a *Attributes) objectName() string {
	if a.Name != "" {
		return a.Name
	}
	if a.Object != nil {
		if m, err := meta.Accessor(a.Object); err == nil {
			if m.GetName() != "" {
				return m.GetName()
			}
			if m.GetGenerateName() != "" {
				return m.GetGenerateName()
			}
		}
	}
	return "Unknown"
}

// Forbiddenf is Forbidden of a formatted message.
func Forbiddenf(a *Attributes, format string, args ...any) error {
	return Forbidden(a, fmt.Errorf(format, args...))
}

// MutateFunc and ValidateFunc are a plugin's two phases.
type (
	MutateFunc   func(ctx context.Context, a *Attributes) error
	ValidateFunc func(ctx context.Context, a *Attributes) error
)
