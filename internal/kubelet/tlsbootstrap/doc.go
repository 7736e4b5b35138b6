// Package tlsbootstrap joins a node agent to a cluster the upstream way
// (kubelet TLS bootstrap): from a server URL and a bootstrap token to a
// client certificate of its own, signed by the cluster CA, and a serving
// certificate for its API, signed by the kubelet-serving CA (which only
// the API server trusts), both through CertificateSigningRequests.
//
// Bootstrap:
//
//  1. Trust. The cluster CA comes from --ca-file, or from the
//     kube-public/cluster-info ConfigMap (read anonymously, the only request
//     made before the server is verified) whose CA must match the
//     --ca-cert-hash pin (sha256 of its public key, kubeadm's format); with
//     neither it refuses. The CA is kept in <DataDir>/pki/ca.crt and must
//     keep matching.
//  2. Identity. A kept client certificate for system:node:<name>
//     (<DataDir>/pki/kubelet-client-current.pem) that chains to the CA and
//     is valid for a day more is reused. Otherwise the agent, as the
//     bootstrap token, creates a kube-apiserver-client-kubelet CSR (an
//     ECDSA P-256 key that never leaves the host), waits for it to be
//     approved and signed, and keeps the result.
//
// ServingIssuer is the agent's Options.IssueServingCert for a joined node:
// as the node it asks for a kubelet-serving certificate for those of the
// requested SANs that are the Node's name or addresses, reusing the kept
// <DataDir>/pki/kubelet-serving.{crt,key} while it still covers them and
// is not signed by the cluster CA (one that is was issued before the
// server had a kubelet-serving CA, and the API server no longer accepts
// it: the agent asks again at its next start).
// RotateClient renews the client certificate at 70-90% of its lifetime, as
// upstream's certificate manager; the serving certificate is replaced at
// the next start once it is about to expire.
package tlsbootstrap
