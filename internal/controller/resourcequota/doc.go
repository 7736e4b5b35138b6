// Package resourcequota is the resource quota controller, as upstream's
// "resourcequota": it keeps each ResourceQuota's status.hard equal to its
// spec.hard and recounts status.used from the objects of its namespace —
// how the usage the ResourceQuota admission plugin charges at each create
// is given back when pods finish or objects are deleted.
//
// A quota is recounted when it is created or its spec changes, when an
// object it counts is deleted or changes what it uses (a pod that
// finishes, a Service that changes type, a claim that grows), and every
// five minutes (upstream's full resync). plan (plan.go) is pure: the
// quota and the objects in, the status to write out; what an object uses
// is package internal/api/quota's, the same the admission plugin charges.
// Objects of the kinds it watches are read from informers; other
// count/<resource>.<group> quotas list their objects' metadata when the
// quota is recounted, and from then on the deletes of that resource are
// watched (through its metadata) so that a deleted object gives its unit
// back at once.
package resourcequota
