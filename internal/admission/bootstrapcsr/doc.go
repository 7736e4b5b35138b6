// Package bootstrapcsr limits what a bootstrap token may ask for: its
// users (system:bootstrappers) may create CertificateSigningRequests for a
// node client certificate (signer kubernetes.io/kube-apiserver-client-kubelet)
// and nothing else, so a leaked join token cannot be used to ask for a
// serving certificate or an admin client certificate.
package bootstrapcsr
