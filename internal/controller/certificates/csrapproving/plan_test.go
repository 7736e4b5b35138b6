package csrapproving

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/api/certificates"
)

func TestPlan(t *testing.T) {
	clientUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	servingUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	nodeOrg := []string{certificates.NodesGroup}
	csr := func(signer, user string, usages []certificatesv1.KeyUsage, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: signer, Username: user, Groups: nodeOrg, Usages: usages}}
		for _, ct := range conds {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: ct, Status: corev1.ConditionTrue})
		}
		return c
	}
	req := func(cn string, ips ...string) *x509.CertificateRequest {
		r := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: nodeOrg}}
		for _, ip := range ips {
			r.IPAddresses = append(r.IPAddresses, net.ParseIP(ip))
		}
		return r
	}
	node := &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}}
	node.Name = "n1"
	const n1 = certificates.NodeUserPrefix + "n1"
	// A node that reports the API server's names and addresses as its own.
	liar := node.DeepCopy()
	for _, a := range []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.96.0.1"}, {Type: corev1.NodeInternalIP, Address: "fd00:10:96::1"},
		{Type: corev1.NodeHostName, Address: "kubernetes.default.svc"}, {Type: corev1.NodeInternalDNS, Address: "kubernetes"},
		{Type: corev1.NodeInternalDNS, Address: "kubernetes.default"}, {Type: corev1.NodeExternalDNS, Address: "kubernetes.default.svc.example.org"},
		{Type: corev1.NodeExternalDNS, Address: "KUBERNETES.Default.svc.cluster.local."}, {Type: corev1.NodeExternalDNS, Address: "*.default.svc.cluster.local"},
		{Type: corev1.NodeInternalDNS, Address: "kubernetes-1.default.svc"}} {
		liar.Status.Addresses = append(liar.Status.Addresses, a)
	}
	serviceCIDRs := []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("fd00:10:96::/108")}
	reqDNS := func(cn string, names ...string) *x509.CertificateRequest {
		r := req(cn, "10.0.0.1")
		r.DNSNames = names
		return r
	}
	serving := func(r *x509.CertificateRequest) State {
		return State{CSR: csr(certificatesv1.KubeletServingSignerName, n1, servingUsages), Request: r, Node: liar, ServiceCIDRs: serviceCIDRs}
	}
	tests := []struct {
		name    string
		st      State
		approve Kind
		why     string // a part of the first NotApproved reason
		deny    string // a part of the Deny message
	}{
		{name: "decided already", st: State{CSR: csr(certificatesv1.KubeAPIServerClientKubeletSignerName, n1, clientUsages, certificatesv1.CertificateDenied)}},
		{name: "unparsable", st: State{CSR: csr(certificatesv1.KubeAPIServerClientKubeletSignerName, n1, clientUsages), ParseErr: errors.New("bad PEM")},
			why: "unparsable"},
		{name: "a node's own client certificate, selfnodeclient allowed",
			st:      State{CSR: csr(certificatesv1.KubeAPIServerClientKubeletSignerName, n1, clientUsages), Request: req(n1), Allowed: map[Kind]bool{SelfNodeClient: true}},
			approve: SelfNodeClient},
		{name: "a node's own client certificate, only nodeclient allowed",
			st:      State{CSR: csr(certificatesv1.KubeAPIServerClientKubeletSignerName, n1, clientUsages), Request: req(n1), Allowed: map[Kind]bool{NodeClient: true}},
			approve: NodeClient, why: "selfnodeclient not allowed"},
		{name: "a bootstrapper's request, not allowed",
			st:  State{CSR: csr(certificatesv1.KubeAPIServerClientKubeletSignerName, "bootstrap", clientUsages), Request: req(n1), Allowed: map[Kind]bool{}},
			why: "nodeclient not allowed"},
		{name: "serving, node not registered",
			st:  State{CSR: csr(certificatesv1.KubeletServingSignerName, n1, servingUsages), Request: req(n1, "10.0.0.1")},
			why: "has not registered"},
		{name: "serving, an address that is not the node's",
			st:  State{CSR: csr(certificatesv1.KubeletServingSignerName, n1, servingUsages), Request: req(n1, "10.9.9.9"), Node: node},
			why: "10.9.9.9 is not one of the node's addresses"},
		{name: "serving, the node's own addresses",
			st:      State{CSR: csr(certificatesv1.KubeletServingSignerName, n1, servingUsages), Request: req(n1, "10.0.0.1"), Node: node},
			approve: NodeServing},
		// Reserved names: denied even though the node reports them.
		{name: "serving, the API server's ClusterIP", st: serving(req(n1, "10.0.0.1", "10.96.0.1")),
			deny: "subjectAltName 10.96.0.1 is in the Service range 10.96.0.0/12"},
		{name: "serving, an IPv6 Service address", st: serving(req(n1, "fd00:10:96::1")), deny: "fd00:10:96::1 is in the Service range"},
		{name: "serving, kubernetes.default.svc", st: serving(reqDNS(n1, "n1", "kubernetes.default.svc")),
			deny: "subjectAltName kubernetes.default.svc is a name of the API server's Service: no node may"},
		{name: "serving, kubernetes", st: serving(reqDNS(n1, "kubernetes")), deny: "kubernetes is a name"},
		{name: "serving, kubernetes.default", st: serving(reqDNS(n1, "kubernetes.default")), deny: "kubernetes.default is a name"},
		{name: "serving, kubernetes.default.svc in another domain", st: serving(reqDNS(n1, "kubernetes.default.svc.example.org")), deny: "is a name"},
		{name: "serving, a fully qualified name in other case", st: serving(reqDNS(n1, "KUBERNETES.Default.svc.cluster.local.")), deny: "is a name"},
		{name: "serving, a wildcard", st: serving(reqDNS(n1, "*.default.svc.cluster.local")), deny: "is a wildcard"},
		{name: "serving, reserved before the node registered",
			st:   State{CSR: csr(certificatesv1.KubeletServingSignerName, n1, servingUsages), Request: reqDNS(n1, "kubernetes.default.svc"), ServiceCIDRs: serviceCIDRs},
			deny: "kubernetes.default.svc"},
		{name: "serving, the liar's own address and name are still fine", st: serving(reqDNS(n1, "n1")), approve: NodeServing},
		{name: "serving, a name like the Service's but not it", st: serving(reqDNS(n1, "kubernetes-1.default.svc")), approve: NodeServing},
		{name: "another signer: not recognised",
			st: State{CSR: csr("example.com/signer", n1, clientUsages), Request: req(n1)}},
	}
	for _, tt := range tests {
		p := plan(tt.st)
		if p.Approve != tt.approve {
			t.Errorf("%s: approve %v, want %v (not approved: %v)", tt.name, p.Approve, tt.approve, p.NotApproved)
		}
		if !strings.Contains(p.Deny, tt.deny) || (tt.deny == "") != (p.Deny == "") {
			t.Errorf("%s: deny %q, want %q", tt.name, p.Deny, tt.deny)
		}
		if p.Deny != "" && p.Approve != Unrecognised {
			t.Errorf("%s: both approved and denied", tt.name)
		}
		if tt.why != "" && (len(p.NotApproved) == 0 || !strings.Contains(p.NotApproved[0], tt.why)) {
			t.Errorf("%s: not approved %v, want %q", tt.name, p.NotApproved, tt.why)
		}
	}
}
