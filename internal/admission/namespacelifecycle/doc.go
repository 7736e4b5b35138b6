// Package namespacelifecycle is upstream's NamespaceLifecycle admission
// plugin, the first of the chain: the namespaces the cluster needs
// (default, kube-system, kube-public) may not be deleted (403 "this
// namespace may not be deleted"); nothing may be created in a namespace
// that does not exist (404 namespaces "x" not found) or is being deleted
// (403 "unable to create new content in namespace x because it is being
// terminated", with the NamespaceTerminating cause controllers look for).
// Updates and deletes of other objects, and anything cluster-scoped, pass.
//
// Upstream reads namespaces from an informer and waits briefly for one it
// has not seen; this plugin reads the API server's storage, which is never
// behind.
package namespacelifecycle
