// Package tlsbootstrap joins a node agent to a cluster the upstream way
// (kubelet TLS bootstrap): from a server URL and a bootstrap token to a
// client certificate of its own, and a serving certificate for its API,
// both signed by the cluster CA through CertificateSigningRequests.
//
// Bootstrap:
//
//  1. Trust. The cluster CA comes from --ca-file, or from the
//     kube-public/cluster-info ConfigMap (read anonymously, the only request
//     made before the server is verified) whose CA must match the
//     --ca-cert-hash pin (sha256 of its public key, kubeadm's format). With
//     neither it refuses: trusting the first CA seen is not acceptable. The
//     CA is then kept in <DataDir>/pki/ca.crt and must keep matching.
//  2. Identity. A client certificate kept in
//     <DataDir>/pki/kubelet-client-current.pem (certificate and key) for
//     system:node:<name> that chains to the CA and is valid for a day more
//     is reused. Otherwise the agent, authenticated by the bootstrap
//     token, creates a kubernetes.io/kube-apiserver-client-kubelet CSR
//     (CN system:node:<name>, O system:nodes, an ECDSA P-256 key made here
//     that never leaves the host), waits for the controller manager to
//     approve and sign it, and keeps the result.
//
// ServingIssuer is the agent's Options.IssueServingCert for a joined node:
// as the node itself it asks for a kubernetes.io/kubelet-serving
// certificate covering those of the requested SANs that are the Node's name
// or addresses (what the approver accepts), reusing the one kept in
// <DataDir>/pki/kubelet-serving.{crt,key} when it still covers them.
//
// RotateClient renews the client certificate at 70-90% of its lifetime,
// as upstream's certificate manager: as the node itself (a selfnodeclient
// request), replacing the kept file, which the client config reads at each
// new connection. The serving certificate is not rotated while running
// yet: one about to expire is replaced at the next start.
package tlsbootstrap
