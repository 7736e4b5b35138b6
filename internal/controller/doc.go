// Package controller holds what plainkube's controllers share; each
// controller lives in its own package under internal/controller/<name>.
//
// A controller is a small program that watches resources through the API
// server (client-go informers) and writes back through it; it never reads
// storage and never calls another controller (a controller is not a library
// of another: what two share lives in a helper package such as events,
// history or endpointutil). It runs on package reconcile's work loop.
//
// Every controller has one shape: observe (listers → a plain State),
// plan (State → Plan, pure, table-tested in the controller's plan_test.go),
// apply (a thin writer of the Plan). This package owns the rest once:
//
//   - Base, embedded by every controller: its name, client, logger and
//     the process's shared informers;
//   - Builder wires one Run: the primary kind (For), the kinds it controls
//     (Owns: an event enqueues the object's controller, checked by UID;
//     orphans wake the primaries whose selector matches), other watches
//     (Watches: obj → keys), informers (own factory with the primary's
//     resync, the process's shared one for Pods and Nodes), sync waiting,
//     tombstones, the event recorder and the workers; delays that batch
//     bursts of events (DelayUpdates, OwnOptions.Delay) and a second queue
//     drained alongside the first (Process);
//   - Shape: one reconcile as Observe → Plan → Apply, conflicts retried;
//   - Expectations: the creates and deletes asked for and not yet seen;
//     UIDExpectations: changes to named objects not yet seen;
//   - SlowStart: creates in batches of 1, 2, 4, …;
//   - DecideClaim, AdoptPatch, ReleasePatch and PodClaimer: which objects a
//     controller owns (upstream's ControllerRefManager rule).
package controller
