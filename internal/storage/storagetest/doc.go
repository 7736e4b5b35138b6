// Package storagetest is the one test suite every storage.Interface backend
// must pass. A backend's test calls RunSuite with a constructor that returns a
// fresh, empty store for each subtest; the suite checks every method's
// contract (revisions, compare-and-swap, snapshot lists and paging, watches,
// compaction, concurrency) the way etcd behaves.
//
// The suite never sleeps to wait for something: it waits on channels with a
// bounded timeout, so it is deterministic and fails fast.
//
// Gated is a store whose watches a test can hold back, to make a watcher
// (a watch cache) fall behind the store on purpose.
package storagetest
