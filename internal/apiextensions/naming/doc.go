// Package naming is upstream's naming condition controller for
// CustomResourceDefinitions: it accepts the names a CRD asks for
// (spec.names) into status.acceptedNames unless another CRD of the same
// group already holds them, and reports that in the NamesAccepted condition
// with upstream's reasons (NoConflicts, PluralConflict, SingularConflict,
// ShortNamesConflict, KindConflict, ListKindConflict). A CRD whose names
// are accepted but that is not established yet gets Established=False
// (Installing); the establishing controller sets it True once the routes
// serve. When a CRD's names change or a CRD goes away, the other CRDs of
// its group are looked at again, since names may have been freed.
package naming
