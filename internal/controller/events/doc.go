// Package events gives controllers an event recorder that writes core/v1
// Events through the API server, as upstream's controllers do.
//
// NewRecorder starts a client-go record.EventBroadcaster whose sink is the
// clientset's events API: repeated events are aggregated and counted by the
// broadcaster's correlator (so `kubectl describe` shows "x3 over 2m"), and
// bursts are rate-limited per source and object as upstream. Events are
// written asynchronously; a failed write is retried a few times and then
// dropped, never failing the caller. The returned stop function (or the end
// of the context) shuts the broadcaster down.
package events
