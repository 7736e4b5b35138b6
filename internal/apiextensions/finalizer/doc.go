// Package finalizer is upstream's CRD finalizer: when a
// CustomResourceDefinition carrying the
// customresourcecleanup.apiextensions.k8s.io finalizer is deleted, it marks
// the CRD Terminating (InstanceDeletionInProgress), deletes every instance
// through the API (a deletecollection per namespace, so that instances'
// own finalizers and the garbage collector are honoured), waits until none
// is left, records InstanceDeletionCompleted (or NeverEstablished for a
// CRD that was never served) and removes its finalizer, which lets the
// deletion complete; the routes then go away with the CRD.
package finalizer
