// Package csrsigning is plainkube's CSR signing controller: the cluster CA
// signs approved CertificateSigningRequests for the built-in signers
// kubernetes.io/kube-apiserver-client, kubernetes.io/kube-apiserver-client-kubelet,
// kubernetes.io/kubelet-serving and kubernetes.io/legacy-unknown, as
// upstream's kube-controller-manager does when given
// --cluster-signing-cert-file/--cluster-signing-key-file.
//
// A request is signed once it has an Approved condition and neither a
// Failed condition nor a certificate. The signer's checks (package
// certificates: the kubelet client and serving shapes, client-auth usages
// for kube-apiserver-client; none for legacy-unknown) failing adds a Failed
// condition (reason SignerValidationFailure) instead. The certificate
// (Sign, pure given a clock) carries the request's subject, SANs and
// public key, the key usages asked for, no other extensions, is not a CA,
// starts 5 minutes in the past and lasts spec.expirationSeconds (at least
// 10 minutes) capped at the controller's duration (default a year) and at
// the CA's own expiry. Requests for other signers are left to their own
// signers.
package csrsigning
