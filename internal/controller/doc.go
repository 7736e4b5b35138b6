// Package controller runs plainkube's controllers and holds what they share.
//
// A controller is a small program that watches resources through the API
// server (client-go informers) and writes back through it; it never reads
// storage and never calls another controller. Each lives in its own package
// under internal/controller/<name>, takes a *rest.Config and builds its own
// clients, and implements Controller. RunAll starts a set of them, each in
// its own goroutine, and restarts one whose Run returns early, with backoff.
//
// Controllers are level-based: an informer event only names a key to look
// at; the key goes into a rate-limited workqueue, and a worker reconciles it
// against current state. ProcessQueue is that worker loop: a reconcile that
// fails is retried with exponential backoff, one that asks to be looked at
// later is re-added after a delay, and a key is never worked on by two
// workers at once.
package controller
