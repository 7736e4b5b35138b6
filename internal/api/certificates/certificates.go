package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

// LegacyUnknownSignerName is the v1beta1-era signer (not creatable in v1).
const LegacyUnknownSignerName = "kubernetes.io/legacy-unknown"

// Node identities in certificates, as upstream.
const (
	NodesGroup     = "system:nodes"
	NodeUserPrefix = "system:node:"
)

// ParseRequest decodes a CSR's PEM PKCS#10 request.
func ParseRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// HasCondition reports whether csr has a condition of type t with status True.
func HasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == t && (c.Status == corev1.ConditionTrue || c.Status == "")
	})
}

// Decided reports whether csr was approved or denied.
func Decided(csr *certificatesv1.CertificateSigningRequest) bool {
	return HasCondition(csr, certificatesv1.CertificateApproved) || HasCondition(csr, certificatesv1.CertificateDenied)
}

// usageSet reports whether usages are exactly one of the allowed sets
// (ignoring order and duplicates).
func usageSetIs(usages []certificatesv1.KeyUsage, allowed ...[]certificatesv1.KeyUsage) bool {
	have := map[certificatesv1.KeyUsage]bool{}
	for _, u := range usages {
		have[u] = true
	}
	for _, set := range allowed {
		if len(set) != len(have) {
			continue
		}
		ok := true
		for _, u := range set {
			ok = ok && have[u]
		}
		if ok {
			return true
		}
	}
	return false
}

var (
	kubeletClientUsages      = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	kubeletClientUsagesNoRSA = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	servingUsages            = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
	servingUsagesNoRSA       = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
)

func isNodesOnly(org []string) bool { return len(org) == 1 && org[0] == NodesGroup }

// ValidateKubeletClient applies upstream's checks to a request for the
// kube-apiserver-client-kubelet signer: subject O exactly system:nodes, CN
// system:node:<name>, no SANs at all, and usages exactly digital signature
// (+ key encipherment) + client auth.
func ValidateKubeletClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	switch {
	case !isNodesOnly(req.Subject.Organization):
		return errors.New("subject organization is not system:nodes")
	case len(req.DNSNames) > 0:
		return errors.New("DNS subjectAltNames are not allowed")
	case len(req.EmailAddresses) > 0:
		return errors.New("Email subjectAltNames are not allowed")
	case len(req.IPAddresses) > 0:
		return errors.New("IP subjectAltNames are not allowed")
	case len(req.URIs) > 0:
		return errors.New("URI subjectAltNames are not allowed")
	case !strings.HasPrefix(req.Subject.CommonName, NodeUserPrefix):
		return errors.New("subject common name does not begin with system:node:")
	case !usageSetIs(usages, kubeletClientUsages, kubeletClientUsagesNoRSA):
		return fmt.Errorf("usages did not match %v", sortedUsages(kubeletClientUsages))
	}
	return nil
}

// ValidateKubeletServing applies upstream's checks to a request for the
// kubelet-serving signer: subject O exactly system:nodes, at least one DNS
// or IP SAN and no email or URI SANs, usages exactly digital signature
// (+ key encipherment) + server auth, CN system:node:<name>.
func ValidateKubeletServing(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	switch {
	case !isNodesOnly(req.Subject.Organization):
		return errors.New("subject organization is not system:nodes")
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errors.New("DNS or IP subjectAltName is required")
	case len(req.EmailAddresses) > 0:
		return errors.New("Email subjectAltNames are not allowed")
	case len(req.URIs) > 0:
		return errors.New("URI subjectAltNames are not allowed")
	case !usageSetIs(usages, servingUsages, servingUsagesNoRSA):
		return fmt.Errorf("usages did not match %v", sortedUsages(servingUsages))
	case !strings.HasPrefix(req.Subject.CommonName, NodeUserPrefix):
		return errors.New("subject common name does not begin with system:node:")
	}
	return nil
}

// ValidateAPIServerClient applies upstream's checks to a request for the
// kube-apiserver-client signer: client auth required; digital signature
// and key encipherment optional; nothing else.
func ValidateAPIServerClient(usages []certificatesv1.KeyUsage) error {
	hasClientAuth := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			hasClientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !hasClientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

func sortedUsages(u []certificatesv1.KeyUsage) []string {
	out := make([]string, len(u))
	for i, x := range u {
		out[i] = string(x)
	}
	slices.Sort(out)
	return out
}

// NodeAddresses are what a node's serving certificate may name: its name
// and Hostname/InternalDNS/ExternalDNS addresses (lower-cased), and its
// InternalIP/ExternalIP addresses.
func NodeAddresses(node *corev1.Node) (names map[string]bool, ips []net.IP) {
	names = map[string]bool{strings.ToLower(node.Name): true}
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			names[strings.ToLower(a.Address)] = true
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	return names, ips
}

// ReservedServingName returns the first SAN of req that no node may have
// in a serving certificate, and why: a DNS name of the API server's own
// Service (kubernetes, kubernetes.default, kubernetes.default.svc and
// kubernetes.default.svc.<any cluster domain>), a wildcard, or an IP in
// one of serviceCIDRs (the API server's ClusterIP among them). "" when
// there is none. A node writes its own addresses, so the approver cannot
// take them as proof of anything; these it refuses whatever the node says.
func ReservedServingName(req *x509.CertificateRequest, serviceCIDRs []netip.Prefix) (san, why string) {
	for _, n := range req.DNSNames {
		name := strings.TrimSuffix(strings.ToLower(n), ".")
		switch {
		case name == "kubernetes" || name == "kubernetes.default" || name == "kubernetes.default.svc" ||
			strings.HasPrefix(name, "kubernetes.default.svc."):
			return n, "is a name of the API server's Service"
		case strings.Contains(name, "*"):
			return n, "is a wildcard"
		}
	}
	for _, ip := range req.IPAddresses {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			continue
		}
		a = a.Unmap()
		for _, cidr := range serviceCIDRs {
			if cidr.Contains(a) {
				return ip.String(), "is in the Service range " + cidr.String()
			}
		}
	}
	return "", ""
}
