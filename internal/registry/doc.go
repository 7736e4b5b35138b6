// Package registry describes every resource the API server serves: its
// names for discovery, its Go types, and its Strategy — the per-resource rules
// for defaults, validation, the spec/status split, generation and field
// selectors. The API server's generic handlers apply these rules; the
// per-group packages below (core, apps, batch, …) supply them.
package registry
