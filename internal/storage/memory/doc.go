// Package memory is an in-memory storage.Interface that behaves like etcd: one
// global revision counter (starting at 1, so the first write gets revision 2
// and 0 can mean "latest"), keys kept sorted, compare-and-swap updates and
// deletes, snapshot reads at past revisions, compaction, and watches that
// replay history in revision order.
//
// History is bounded: the store keeps the last Options.History changes (one
// per revision). Reads and watches that need an older revision, or one older
// than the last Compact, get ErrCompacted.
//
// Each watch is served by its own goroutine that reads the shared history at
// its own pace, so a slow watcher never blocks writers or other watchers. A
// watcher that falls so far behind that the history it still needs is
// dropped ends with EventError(ErrCompacted), just as a slow etcd watcher
// that is overtaken by compaction.
//
// Stored values are copied on write; values returned by Get, List and Watch
// are shared with the store and must not be modified.
package memory
