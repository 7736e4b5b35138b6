package csrapproving

import (
	"crypto/x509"
	"net/netip"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"plainkube.dev/plainkube/internal/api/certificates"
)

// State is what one look at a request sees: the request; its parsed
// certificate request (or why it does not parse); for a serving request
// the node it names (nil: not registered) and the cluster's Service
// ranges (whose addresses no node may name); for the client kinds, what
// SubjectAccessReviews answered, asked in order of preference until one
// allowed.
type State struct {
	CSR          *certificatesv1.CertificateSigningRequest
	Request      *x509.CertificateRequest
	ParseErr     error
	Node         *corev1.Node
	ServiceCIDRs []netip.Prefix
	Allowed      map[Kind]bool
}

// Plan is the kind to approve the request as (Unrecognised: none), and
// why recognised kinds were not approved; or, for a node's serving request
// naming what no node may (certificates.ReservedServingName), the message
// to deny it with.
type Plan struct {
	Approve     Kind
	NotApproved []string
	Deny        string
}

// DeniedReason is the reason of the Denied condition of a node's serving
// request naming a reserved name or address.
const DeniedReason = "ReservedSubjectAltName"

// plan approves an undecided request as the first kind it is recognised
// as that is allowed: a client kind its SubjectAccessReview allows, a
// serving request whose SANs are the node's own name and addresses and
// none of them reserved (a serving request with a reserved SAN is denied:
// what the node reports about itself does not make it the API server).
func plan(st State) Plan {
	var p Plan
	if !undecided(st.CSR) {
		return p
	}
	if st.ParseErr != nil {
		p.NotApproved = append(p.NotApproved, "unparsable request: "+st.ParseErr.Error())
		return p
	}
	for _, kind := range Recognize(st.CSR, st.Request) {
		if kind == NodeServing {
			if san, why := certificates.ReservedServingName(st.Request, st.ServiceCIDRs); san != "" {
				p.Deny = "subjectAltName " + san + " " + why + ": no node may have a serving certificate for it"
				return p
			}
			if st.Node == nil {
				p.NotApproved = append(p.NotApproved, "the node has not registered yet")
				continue
			}
			if ok, san := ServingSANsMatch(st.Request, st.Node); !ok {
				p.NotApproved = append(p.NotApproved, "subjectAltName "+san+" is not one of the node's addresses")
				continue
			}
		} else if !st.Allowed[kind] {
			p.NotApproved = append(p.NotApproved, "subject access review for "+kind.subresource()+" not allowed")
			continue
		}
		p.Approve = kind
		return p
	}
	return p
}

// Kind is what a request was recognised as.
type Kind int

const (
	// Unrecognised requests are left alone.
	Unrecognised Kind = iota
	// SelfNodeClient: a node asking for its own client certificate.
	SelfNodeClient
	// NodeClient: someone (a bootstrapper) asking for a node client certificate.
	NodeClient
	// NodeServing: a node asking for its own serving certificate.
	NodeServing
)

// Recognize classifies a pending request; for the client kinds, the
// permission a SubjectAccessReview must allow is returned in order of
// preference, as upstream tries selfnodeclient before nodeclient.
func Recognize(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) []Kind {
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		if certificates.ValidateKubeletClient(req, csr.Spec.Usages) != nil {
			return nil
		}
		if csr.Spec.Username == req.Subject.CommonName {
			return []Kind{SelfNodeClient, NodeClient}
		}
		return []Kind{NodeClient}
	case certificatesv1.KubeletServingSignerName:
		if certificates.ValidateKubeletServing(req, csr.Spec.Usages) != nil {
			return nil
		}
		if csr.Spec.Username != req.Subject.CommonName || !slices.Contains(csr.Spec.Groups, certificates.NodesGroup) {
			return nil
		}
		return []Kind{NodeServing}
	}
	return nil
}

// subresource is the SubjectAccessReview permission of a client kind.
func (k Kind) subresource() string {
	switch k {
	case SelfNodeClient:
		return "selfnodeclient"
	case NodeClient:
		return "nodeclient"
	}
	return ""
}

func (k Kind) message() string {
	switch k {
	case SelfNodeClient:
		return "Auto approving self kubelet client certificate after SubjectAccessReview."
	case NodeClient:
		return "Auto approving kubelet client certificate after SubjectAccessReview."
	}
	return "Auto approving kubelet serving certificate: the requesting node's own name and addresses."
}

// ServingSANsMatch reports whether every SAN of req belongs to node: DNS
// names its name or a Hostname/InternalDNS/ExternalDNS address, IPs an
// InternalIP/ExternalIP address. It returns the first SAN that does not.
func ServingSANsMatch(req *x509.CertificateRequest, node *corev1.Node) (bool, string) {
	names, ips := certificates.NodeAddresses(node)
	for _, n := range req.DNSNames {
		if !names[strings.ToLower(n)] {
			return false, n
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return false, ip.String()
		}
	}
	return true, ""
}

func (k Kind) String() string {
	switch k {
	case SelfNodeClient:
		return "selfnodeclient"
	case NodeClient:
		return "nodeclient"
	case NodeServing:
		return "nodeserving"
	}
	return "unrecognised"
}
