// Package admission is the one admission chain of the API server: the
// ordered list of plugins (one per folder below) that every write passes
// through besides its resource's registry.Strategy. The server wiring
// builds the Chain in upstream's order (internal/server/admission.go:
// NamespaceLifecycle, ServiceAccount, NodeRestriction, …, RBAC escalation
// checks, webhooks, ResourceQuota; upstream's plugins switched on and off
// by name); the API server runs it knowing no plugin by name. Metrics
// (metrics.go) times the chain's steps and each plugin (Chain.Instrument)
// and counts webhook calls, under upstream's apiserver_admission_* names.
//
// Every request that writes is admitted with Attributes (operation, kind
// and resource at the version the request used, subresource, namespace,
// name, new and stored object, options, dry run, user): creates (name
// empty under generateName), updates, patches and server-side applies,
// writes of status, scale (as a Scale) and other subresources, deletes
// (once per object of a deletecollection), the creates subresource
// handlers serve (pods/binding, pods/eviction, serviceaccounts/token, the
// Binding, Eviction or TokenRequest as the object) and connects (exec,
// attach, portforward, proxy, the options as the object). A request meets
// the chain twice: every plugin's Mutate in order after defaulting, then
// the resource's own validation (so whatever a plugin changed is
// validated), then every plugin's Validate in order, before storage. Dry
// runs are admitted too; an update retried on a conflict is admitted
// again. Plugins' warnings reach the client as Warning headers.
//
// Besides upstream's two phases a plugin may have storage hooks
// (BeforeCreate and BeforeUpdate, which may reserve things and hand back
// an undo; AfterUpdate and AfterDelete once the write is stored): the
// Service allocator's cluster IPs and node ports. They run around the
// write itself, not on dry runs.
package admission
