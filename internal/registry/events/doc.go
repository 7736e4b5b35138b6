// Package events supplies the registry.Resource description of
// events.k8s.io/v1 events.
//
// Upstream serves events.k8s.io/v1 Events from the same storage as core/v1
// Events: one object, two shapes (regarding/note/reportingController here,
// involvedObject/message/reportingComponent there), and the same TTL
// (one hour by default). Wiring the shared storage is the API server's job;
// this package only describes the resource and its rules.
//
// Creates and updates through events.k8s.io/v1 get upstream's strict
// validation: eventTime, reportingController, reportingInstance, action and
// reason are required, type is Normal or Warning, the deprecated core fields
// must stay unset, and almost every field is immutable. Error paths use the
// core field names (involvedObject, message, source, …), exactly as
// upstream reports them, because upstream validates the shared internal
// type. Field selectors use the events.k8s.io names (regarding.kind,
// reportingController, …). All functions are pure.
package events

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the events.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{events()}
}
