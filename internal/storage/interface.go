package storage

import (
	"context"
	"errors"
)

// Sentinel errors. The API server translates them into metav1.Status in one
// place; backends wrap them with %w when they add context.
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("storage: key not found")
	// ErrKeyExists: Create found the key already present.
	ErrKeyExists = errors.New("storage: key already exists")
	// ErrConflict: the expected revision did not match the stored one.
	ErrConflict = errors.New("storage: revision conflict")
	// ErrCompacted: the requested revision is older than the oldest one kept.
	ErrCompacted = errors.New("storage: revision compacted")
	// ErrFutureRevision: the requested revision is newer than the store's.
	ErrFutureRevision = errors.New("storage: revision is in the future")
)

// KeyValue is one stored object at one revision.
type KeyValue struct {
	Key   string
	Value []byte
	// CreateRevision is the revision that created the key.
	CreateRevision int64
	// ModRevision is the revision of the last write: the object's resourceVersion.
	ModRevision int64
	// Stale: Value is stored in a form a write would not store now (it
	// was encrypted with a key other than the current one; package
	// encrypted). An update must write it even if it changes nothing.
	Stale bool
}

// EventType says what happened to a key.
type EventType int

const (
	// EventPut is a create or an update. IsCreate tells which.
	EventPut EventType = iota
	// EventDelete removes the key; PrevValue holds its last value.
	EventDelete
	// EventError ends a watch; Err says why (ErrCompacted for a revision too old).
	EventError
	// EventProgress says the watch has delivered every change under its
	// prefix up to Revision; it is sent only when asked for with
	// ProgressRequester.RequestProgress.
	EventProgress
)

// Event is one change seen by a watch.
type Event struct {
	Type EventType
	Key  string
	// Value is the new value (empty for a delete).
	Value []byte
	// PrevValue is the value before this change (empty for a create).
	PrevValue []byte
	// Revision is the revision of this change.
	Revision int64
	// IsCreate is true when a put created the key.
	IsCreate bool
	// Stale is KeyValue.Stale for Value.
	Stale bool
	// Err is set on EventError.
	Err error
}

// ListOptions select what List returns.
type ListOptions struct {
	// Revision reads the snapshot at that revision; 0 reads the latest.
	// A compacted revision gives ErrCompacted, a future one ErrFutureRevision.
	Revision int64
	// Limit caps the number of items (0: no limit).
	Limit int64
	// StartKey, if set, is the first key to return (inclusive); it must be
	// under the prefix. Used to continue a paginated list.
	StartKey string
}

// ListResult is a page of a list.
type ListResult struct {
	// Items are sorted by key.
	Items []KeyValue
	// Revision is the revision the list was read at.
	Revision int64
	// More is true when Limit cut the list short.
	More bool
	// RemainingCount is the number of items after this page (when More).
	RemainingCount int64
}

// Interface is the store. Keys are '/'-separated paths such as
// "/registry/pods/default/web-1"; a prefix given to List or Watch ends in '/'
// (or is a full key for Watch of one object).
// All methods are safe for concurrent use.
type Interface interface {
	// Create stores value under key if the key does not exist (ErrKeyExists
	// otherwise) and returns the new revision.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// Get returns the current value (ErrNotFound if absent).
	Get(ctx context.Context, key string) (KeyValue, error)
	// List returns the keys under prefix, sorted, at one revision.
	List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error)
	// Update replaces the value if the key's ModRevision equals expectedRevision
	// (ErrConflict otherwise, ErrNotFound if absent) and returns the new revision.
	Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error)
	// Delete removes the key. If expectedRevision is non-zero it must equal the
	// key's ModRevision (ErrConflict otherwise). It returns the deleted value
	// and the revision of the delete.
	Delete(ctx context.Context, key string, expectedRevision int64) (KeyValue, int64, error)
	// Watch streams every change under prefix with a revision greater than
	// fromRevision, in revision order; fromRevision 0 means from now on. If
	// fromRevision is compacted the first event is EventError(ErrCompacted).
	// The channel is closed when ctx ends or after an EventError.
	Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan Event, error)
	// CurrentRevision returns the store's latest revision.
	CurrentRevision(ctx context.Context) (int64, error)
	// Compact discards the history before revision: afterwards, reads and
	// watches that need a revision lower than it give ErrCompacted.
	Compact(ctx context.Context, revision int64) error
	// Close releases the store's resources.
	Close() error
}

// ProgressRequester is implemented by stores whose watches can report how
// far they have got without a change to report (etcd's progress notify).
// The watch cache uses it to confirm that a quiet prefix is up to date
// without listing it.
type ProgressRequester interface {
	// RequestProgress asks every watch that has caught up to send an
	// EventProgress with the store's current revision.
	RequestProgress(ctx context.Context) error
}
