// Package reviews describes the review resources of authorization.k8s.io
// and authentication.k8s.io: ephemeral resources that are never stored, whose
// create their Handler answers from the API server's authenticator and
// authorizer, lent through registry.API (`kubectl auth can-i`,
// `kubectl auth whoami`).
package reviews
