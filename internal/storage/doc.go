// Package storage defines the versioned key-value store that the API server
// keeps every object in, and the errors it reports.
//
// The contract is etcd's: every write bumps one global revision, an object's
// resourceVersion is the revision of its last write (ModRevision), updates and
// deletes are compare-and-swap on that revision, and a watch replays every
// change after a given revision in order until that revision is compacted.
//
// Backends live in sub-packages (etcd, memory) and all pass the shared suite
// in storagetest. The cache package wraps any backend with a watch cache that
// serves lists and watches from memory.
package storage
