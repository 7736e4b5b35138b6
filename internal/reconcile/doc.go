// Package reconcile is the generic work loop every control loop in
// plainkube runs on — the controllers, the CRD machinery and the node agent
// alike — and nothing specific to any of them.
//
// A control loop is level-based: an informer event only names a key to look
// at; the key goes into a rate-limited workqueue, and a worker reconciles it
// against current state. ProcessQueue is that worker loop: a reconcile that
// fails is retried with exponential backoff, one that asks to be looked at
// later is re-added after a delay, and a key is never worked on by two
// workers at once. RunAll starts a set of loops (each a Controller), each in
// its own goroutine, and restarts one whose Run returns early, with backoff.
// SharedInformers is the one informer factory a process's components share,
// so each resource is listed, watched and held in memory once.
package reconcile
