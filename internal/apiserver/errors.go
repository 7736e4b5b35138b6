package apiserver

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/storage"
)

// storageError translates a storage sentinel error about one object into the
// Status clients expect. It is the only place that does so.
func storageError(err error, gr schema.GroupResource, name string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrKeyExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(errModified))
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired("too old resource version")
	case errors.Is(err, storage.ErrFutureRevision):
		return newTooLargeResourceVersion()
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewInternalError(err)
}

const errModified = "the object has been modified; please apply your changes to the latest version and try again"

// newTooLargeResourceVersion is upstream's answer to a read at a revision the
// store has not reached: 504 with reason Timeout and a ResourceVersionTooLarge cause.
func newTooLargeResourceVersion() error {
	err := apierrors.NewTimeoutError("Too large resource version", 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// requestTimedOut is upstream's 504 for a request whose deadline
// (requestDeadline) passed.
func requestTimedOut() *apierrors.StatusError {
	return apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)
}

// toStatus returns the Status for any error a handler returns.
func toStatus(err error) *metav1.Status {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		if s.Kind == "" {
			s.Kind, s.APIVersion = "Status", "v1"
		}
		return &s
	}
	return &apierrors.NewInternalError(err).ErrStatus
}

func badRequest(format string, args ...interface{}) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

func methodNotAllowed(verb string, gr schema.GroupResource) error {
	return apierrors.NewMethodNotSupported(gr, verb)
}

func notImplemented(msg string) error {
	return registry.NewStatusError(http.StatusNotImplemented, "NotImplemented", msg)
}

func unsupportedMediaType(contentType string) error {
	return registry.NewStatusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		fmt.Sprintf("the body of the request was in an unknown format (%q) - accepted media types include: %s, %s, %s", contentType, mediaJSON, mediaYAML, mediaProtobuf))
}
