// Package auth answers two questions for the API server: who sent a request
// (authentication: x509 client certificates, bearer tokens — among them
// service-account JWTs, which ServiceAccountTokens issues and checks — or
// the in-process loopback identity) and may they do it (authorization,
// behind the Authorizer interface).
//
// The user is carried in the request's context from the authentication
// filter to the handlers; nothing else in the request is trusted for it.
//
// Joining nodes (bootstraptoken.go, nodeauthorizer.go, basicuser.go):
// bootstrap tokens authenticate against their kube-system Secrets as
// system:bootstrap:<id>; until RBAC exists, fixed authorizers give
// bootstrappers, nodes (system:node:<name> in system:nodes) and
// authenticated users what upstream's default roles give them.
package auth
