// Package controller holds what plainkube's controllers share; each
// controller lives in its own package under internal/controller/<name>.
//
// A controller is a small program that watches resources through the API
// server (client-go informers) and writes back through it; it never reads
// storage and never calls another controller (a controller is not a library
// of another: what two share lives in a helper package such as events,
// history or endpointutil). It runs on package reconcile's work loop.
//
// This package decides which objects a controller owns: DecideClaim is
// upstream's ControllerRefManager rule for adopting orphans and releasing
// objects that no longer match.
package controller
