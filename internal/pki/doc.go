// Package pki creates and loads the cluster's certificates: one CA, the API
// server's serving certificate, the admin client certificate, and the key
// that signs service-account tokens. It also writes the admin kubeconfig.
//
// LoadOrCreate is idempotent: it keeps what is on disk and valid, and issues
// only what is missing, mismatched, expiring, or (for the serving
// certificate) lacking a requested SAN. The CA is never replaced once it
// exists, so certificates and kubeconfigs handed out earlier stay valid.
//
// Keys are ECDSA P-256 (fast to generate), stored as PKCS#8 PEM; RSA and EC
// keys in other PEM encodings are accepted on load. The package does no
// logging and starts no goroutines; its clock is injectable (Options.Now).
package pki
