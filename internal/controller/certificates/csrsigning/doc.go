// Package csrsigning is plainkube's CSR signing controller: it signs
// approved CertificateSigningRequests for the built-in signers
// kubernetes.io/kube-apiserver-client, kubernetes.io/kube-apiserver-client-kubelet
// and kubernetes.io/legacy-unknown with the cluster CA, and for
// kubernetes.io/kubelet-serving with a CA of its own, the kubelet-serving
// CA, as upstream's kube-controller-manager does when given
// --cluster-signing-cert-file/--cluster-signing-key-file and
// --cluster-signing-kubelet-serving-cert-file/-key-file.
//
// Why two CAs: a kubelet-serving certificate names what a node says it is
// (its name and the addresses in its own Node status, which the node
// writes), so whoever controls a node can have one issued for names it
// chooses. Signed by the cluster CA, which every client of the API server
// trusts (kubeconfigs, kube-root-ca.crt in every namespace, cluster-info),
// such a certificate for kubernetes.default.svc or the API server's
// ClusterIP would let a node pass for the API server to every pod and
// user. The kubelet-serving CA is trusted by the API server alone, for its
// own connections to node agents (logs, exec, attach, port-forward, the
// node proxy, metrics), so the worst a node can get is a certificate that
// is only ever checked when the API server dials a node — and there the
// API server checks the address it dials, which is that node's own. The
// approver (package csrapproving) also refuses reserved names; the CA split
// holds even when an administrator approves by hand. Without a
// kubelet-serving CA the controller leaves kubelet-serving requests
// unsigned: the cluster CA never signs them.
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
