// Package registry describes every resource the API server serves: its
// names for discovery, its Go types, and its Strategy — the per-resource rules
// for defaults, validation, the spec/status split, generation and field
// selectors — and its own behaviour beyond the generic verbs: the
// subresources that write one part of the object (Part) and the handlers
// of the subresources, or whole resources, that answer for themselves
// (Handler), to which the API server lends what they need through the
// small API interface. The API server's generic handlers apply these
// rules and route to these handlers; the per-group packages below (core,
// apps, batch, …) supply them.
package registry
