// Package certificates holds what plainkube's certificate controllers
// share: parsing a CertificateSigningRequest's PKCS#10 request, reading its
// conditions, and the checks upstream applies to the kubelet signers'
// requests (kubernetes.io/kube-apiserver-client-kubelet and
// kubernetes.io/kubelet-serving). The controllers themselves are
// csrapproving (auto-approval of node certificates), csrsigning (the
// cluster CA signing approved requests) and csrcleaner (deleting requests
// that are done with).
package certificates
