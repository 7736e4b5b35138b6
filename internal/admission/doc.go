// Package admission is the one admission chain of the API server: the
// ordered list of plugins (one per folder below: serviceaccount,
// defaulttolerationseconds, noderestriction, the Service allocator…) that
// every write of a resource passes through besides its registry.Strategy.
// The server wiring (internal/server) builds the Chain; the API server
// runs it, knowing no plugin by name.
//
// A write meets the chain at fixed points: Admit (mutating) after
// defaulting and before validation, on dry runs too; BeforeCreate and
// BeforeUpdate (validating, may reserve things and hand back an undo)
// after validation; AfterDelete once an object is gone. At each point the
// plugins that apply to the object's resource run in the Chain's order.
package admission
