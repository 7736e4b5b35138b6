// Package certificates holds upstream's three admission plugins for
// CertificateSigningRequests: CertificateApproval (approving or denying a
// request through /approval needs the approve verb on the request's
// signer), CertificateSigning (setting the certificate or conditions
// through /status needs the sign verb on it) and
// CertificateSubjectRestriction (no kubernetes.io/kube-apiserver-client
// request may ask for the system:masters group). Permission on a signer
// is asked of the API server's authorizer as upstream asks it: the verb on
// certificates.k8s.io "signers" named after the signer, else named
// "<domain>/*".
package certificates
