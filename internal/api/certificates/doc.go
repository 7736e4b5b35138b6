// Package certificates holds the semantics of CertificateSigningRequests
// that several components share: parsing a request's PKCS#10 body, reading
// its conditions, and the checks upstream applies to the kubelet signers'
// requests (kubernetes.io/kube-apiserver-client-kubelet and
// kubernetes.io/kubelet-serving). The certificate controllers
// (internal/controller/certificates/...) decide and sign with it; the node
// agent's TLS bootstrap (internal/kubelet/tlsbootstrap) builds requests
// those checks accept.
package certificates
