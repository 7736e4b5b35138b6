// Package webhooktest is an admission webhook for tests: an HTTPS server
// on 127.0.0.1 that answers AdmissionReviews (v1) with a function of the
// request and keeps the requests it was sent, for the webhook plugins'
// unit tests and the server's integration tests alike.
package webhooktest
