// Package csrapproving is plainkube's CSR approving controller: it
// auto-approves the certificate signing requests nodes make for their own
// certificates, as upstream's csrapproving controller (and, for serving
// certificates, as the approvers clusters usually add for kubelet-serving).
//
// It watches CertificateSigningRequests and Nodes. A pending request (no
// Approved or Denied condition, no certificate) is recognised by Recognize
// (pure):
//
//   - kubernetes.io/kube-apiserver-client-kubelet requests that pass
//     upstream's kubelet client checks are approved if a SubjectAccessReview
//     for the requester allows create on certificatesigningrequests/
//     selfnodeclient (when the requester is the certificate's CN, a node
//     renewing itself) or certificatesigningrequests/nodeclient (a
//     bootstrap-token user, system:bootstrappers, asking for a new node).
//   - kubernetes.io/kubelet-serving requests that pass upstream's serving
//     checks are approved when the requester is the node named in the CN
//     (system:node:<name> in system:nodes) and every SAN is that node's:
//     DNS names its name or its Hostname/InternalDNS/ExternalDNS addresses,
//     IPs its InternalIP/ExternalIP addresses (read from the Node, so a node
//     asks after it registered). Node changes requeue that node's requests.
//     A node writes those addresses itself, so they vouch for nothing: such
//     a certificate is signed by the kubelet-serving CA, which only the API
//     server trusts, never by the cluster CA its clients trust (package
//     csrsigning says why). As a second guard, a node's serving request
//     naming what belongs to the API server — kubernetes,
//     kubernetes.default, kubernetes.default.svc,
//     kubernetes.default.svc.<domain>, a wildcard, or an address in the
//     Service ranges (ServiceCIDRs; its ClusterIP among them) — is denied
//     (reason ReservedSubjectAltName, the message naming the SAN), whatever
//     the node reports, so the node's agent sees why at once.
//
// Anything else is left pending for an administrator (kubectl certificate
// approve), as upstream does. Approval goes through the /approval
// subresource with reason AutoApproved.
//
// Observe reads the request, its node and the SubjectAccessReviews' answers;
// plan (plan.go, pure, table-tested in plan_test.go) picks the kind to
// approve it as; apply writes the approval.
package csrapproving
