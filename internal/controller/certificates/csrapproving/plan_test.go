package csrapproving

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
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
	tests := []struct {
		name    string
		st      State
		approve Kind
		why     string // a part of the first NotApproved reason
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
		{name: "another signer: not recognised",
			st: State{CSR: csr("example.com/signer", n1, clientUsages), Request: req(n1)}},
	}
	for _, tt := range tests {
		p := plan(tt.st)
		if p.Approve != tt.approve {
			t.Errorf("%s: approve %v, want %v (not approved: %v)", tt.name, p.Approve, tt.approve, p.NotApproved)
		}
		if tt.why != "" && (len(p.NotApproved) == 0 || !strings.Contains(p.NotApproved[0], tt.why)) {
			t.Errorf("%s: not approved %v, want %q", tt.name, p.NotApproved, tt.why)
		}
	}
}
