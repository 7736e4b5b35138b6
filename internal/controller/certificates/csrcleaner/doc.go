// Package csrcleaner is plainkube's CSR cleaner: it deletes certificate
// signing requests that have served their purpose, as upstream's
// csrcleaner, so that the requests nodes make do not pile up.
//
// Every Interval (an hour, as upstream) it lists the requests from its
// informer and deletes those plan (plan.go: Expired, pure, table-tested in
// plan_test.go) says are done: issued (approved
// with a certificate) more than an hour ago by the Approved condition's
// lastUpdateTime, denied or failed more than an hour ago, pending (neither
// approved nor denied) more than 24 hours after creation, or whose issued
// certificate has expired.
package csrcleaner
