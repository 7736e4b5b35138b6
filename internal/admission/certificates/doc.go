// Package certificates holds upstream's admission plugins for
// certificates.k8s.io: CertificateApproval (approving or denying a
// CertificateSigningRequest through /approval needs the approve verb on
// the request's signer), CertificateSigning (setting the certificate or
// conditions through /status needs the sign verb on it),
// CertificateSubjectRestriction (no kubernetes.io/kube-apiserver-client
// request may ask for the system:masters group) and
// ClusterTrustBundleAttest (a ClusterTrustBundle naming a signer needs
// the attest verb on it). PodCertificateSigning is upstream's
// PodCertificateRequest status strategy check (changing a request's
// status needs sign on its signer), made here where the authorizer is. Permission on a signer
// is asked of the API server's authorizer as upstream asks it: the verb on
// certificates.k8s.io "signers" named after the signer, else named
// "<domain>/*".
package certificates
