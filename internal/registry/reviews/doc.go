// Package reviews describes the review resources of authorization.k8s.io
// and authentication.k8s.io: ephemeral resources that are never stored, whose
// create the API server answers from its authenticator and authorizer
// (`kubectl auth can-i`, `kubectl auth whoami`).
package reviews
