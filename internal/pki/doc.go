// Package pki creates and loads the cluster's certificates: the cluster CA,
// the API server's serving certificate, the admin client certificate, the
// key that signs service-account tokens, and a second CA, the
// kubelet-serving CA, that signs node agents' serving certificates and is
// trusted only by the API server's client for node agents (never by
// clients of the API server, so a certificate a node can ask for cannot
// pass for the API server's). It also writes the admin kubeconfig.
//
// LoadOrCreate is idempotent: it keeps what is on disk and valid, and issues
// only what is missing, mismatched, expiring, or (for the serving
// certificate) lacking a requested SAN. A CA is never replaced once it
// exists, so certificates and kubeconfigs handed out earlier stay valid; a
// directory made before the kubelet-serving CA existed gets one.
//
// Keys are ECDSA P-256 (fast to generate), stored as PKCS#8 PEM; RSA and EC
// keys in other PEM encodings are accepted on load. The package does no
// logging and starts no goroutines; its clock is injectable (Options.Now).
package pki
