package csrapproving_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/controller/certificates/csrapproving"
	"plainkube.dev/plainkube/internal/controller/controllertest"
	"plainkube.dev/plainkube/internal/loopback"
)

// as is cfg acting as u (through the whole filter chain).
func as(t *testing.T, cfg *rest.Config, u *auth.User) kubernetes.Interface {
	c := rest.CopyConfig(cfg)
	c.Transport = &loopback.Transport{Handler: cfg.Transport.(*loopback.Transport).Handler, User: u}
	return controllertest.Clientset(t, c)
}

func request(t *testing.T, signer string, tmpl *x509.CertificateRequest, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: signer, Usages: usages,
		},
	}
}

func nodeUser(name string) *auth.User {
	return &auth.User{Name: "system:node:" + name, Groups: []string{auth.GroupNodes, auth.GroupAuthenticated}}
}

var (
	clientUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	nodesSubject  = func(n string) pkix.Name {
		return pkix.Name{CommonName: "system:node:" + n, Organization: []string{"system:nodes"}}
	}
)

// TestApproval creates requests as bootstrappers, nodes and others, and
// checks which ones the controller approves.
func TestApproval(t *testing.T) {
	cfg := controllertest.StartServer(t)
	admin := controllertest.Clientset(t, cfg)
	c, err := csrapproving.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)
	ctx := context.Background()
	boot := as(t, cfg, &auth.User{Name: "system:bootstrap:abcdef", Groups: []string{auth.GroupBootstrappers, "system:bootstrappers:plainkube", auth.GroupAuthenticated}})
	n1, n2 := as(t, cfg, nodeUser("n1")), as(t, cfg, nodeUser("n2"))
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.2.3"}, {Type: corev1.NodeHostName, Address: "host1"}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A node that reports the API server's name and ClusterIP as its own
	// (a node writes its own status).
	liarClient := as(t, cfg, nodeUser("liar"))
	liar, err := liarClient.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "liar"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	liar.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.2.4"}, {Type: corev1.NodeInternalIP, Address: "10.96.0.1"},
		{Type: corev1.NodeHostName, Address: "kubernetes.default.svc"}}
	if _, err := liarClient.CoreV1().Nodes().UpdateStatus(ctx, liar, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	type outcome int
	const (
		pending outcome = iota
		approved
		denied
		// refused: NodeRestriction refuses the create (a node asks only
		// for its own certificates), before the approver could see it.
		refused
	)
	tests := []struct {
		name string
		by   kubernetes.Interface
		csr  *certificatesv1.CertificateSigningRequest
		want outcome
	}{
		{"bootstrapper asks a node client certificate", boot,
			request(t, certificatesv1.KubeAPIServerClientKubeletSignerName, &x509.CertificateRequest{Subject: nodesSubject("new")}, clientUsages...), approved},
		{"node renews its own client certificate", n1,
			request(t, certificatesv1.KubeAPIServerClientKubeletSignerName, &x509.CertificateRequest{Subject: nodesSubject("n1")}, clientUsages...), approved},
		{"node asks another node's client certificate", n2,
			request(t, certificatesv1.KubeAPIServerClientKubeletSignerName, &x509.CertificateRequest{Subject: nodesSubject("n1")}, clientUsages...), refused},
		{"client certificate with a SAN", boot,
			request(t, certificatesv1.KubeAPIServerClientKubeletSignerName, &x509.CertificateRequest{Subject: nodesSubject("new"), DNSNames: []string{"x"}}, clientUsages...), pending},
		{"client certificate with server auth", boot,
			request(t, certificatesv1.KubeAPIServerClientKubeletSignerName, &x509.CertificateRequest{Subject: nodesSubject("new")},
				certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth), pending},
		{"client certificate outside system:nodes", boot,
			request(t, certificatesv1.KubeAPIServerClientKubeletSignerName, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:new", Organization: []string{"system:masters"}}}, clientUsages...), pending},
		{"node serving certificate for its own addresses", n1,
			request(t, certificatesv1.KubeletServingSignerName, &x509.CertificateRequest{Subject: nodesSubject("n1"),
				DNSNames: []string{"n1", "host1"}, IPAddresses: []net.IP{net.ParseIP("10.1.2.3")}}, servingUsages...), approved},
		{"node serving certificate for a foreign address", n1,
			request(t, certificatesv1.KubeletServingSignerName, &x509.CertificateRequest{Subject: nodesSubject("n1"),
				DNSNames: []string{"n1"}, IPAddresses: []net.IP{net.ParseIP("10.9.9.9")}}, servingUsages...), pending},
		{"node serving certificate for a foreign name", n1,
			request(t, certificatesv1.KubeletServingSignerName, &x509.CertificateRequest{Subject: nodesSubject("n1"),
				DNSNames: []string{"kubernetes.default"}}, servingUsages...), pending},
		{"serving certificate for kubernetes.default.svc, which the node reports", liarClient,
			request(t, certificatesv1.KubeletServingSignerName, &x509.CertificateRequest{Subject: nodesSubject("liar"),
				DNSNames: []string{"liar", "kubernetes.default.svc"}, IPAddresses: []net.IP{net.ParseIP("10.1.2.4")}}, servingUsages...), denied},
		{"serving certificate for the API server's ClusterIP, which the node reports", liarClient,
			request(t, certificatesv1.KubeletServingSignerName, &x509.CertificateRequest{Subject: nodesSubject("liar"),
				DNSNames: []string{"liar"}, IPAddresses: []net.IP{net.ParseIP("10.96.0.1")}}, servingUsages...), denied},
		{"that node's serving certificate for its own name and address", liarClient,
			request(t, certificatesv1.KubeletServingSignerName, &x509.CertificateRequest{Subject: nodesSubject("liar"),
				DNSNames: []string{"liar"}, IPAddresses: []net.IP{net.ParseIP("10.1.2.4")}}, servingUsages...), approved},
		{"serving certificate for another node", n2,
			request(t, certificatesv1.KubeletServingSignerName, &x509.CertificateRequest{Subject: nodesSubject("n1"),
				DNSNames: []string{"n1"}}, servingUsages...), refused},
	}
	// A bootstrap token may ask for nothing but a node client certificate
	// (the server's BootstrapCSRRestriction admission).
	for _, csr := range []*certificatesv1.CertificateSigningRequest{
		request(t, certificatesv1.KubeAPIServerClientSignerName, &x509.CertificateRequest{Subject: nodesSubject("new")}, clientUsages...),
		request(t, certificatesv1.KubeletServingSignerName, &x509.CertificateRequest{Subject: nodesSubject("n1"), DNSNames: []string{"n1"}}, servingUsages...),
	} {
		if _, err := boot.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("a bootstrapper asked for a %s certificate: %v", csr.Spec.SignerName, err)
		}
	}
	names := make([]string, len(tests))
	for i, tc := range tests {
		got, err := tc.by.CertificatesV1().CertificateSigningRequests().Create(ctx, tc.csr, metav1.CreateOptions{})
		if tc.want == refused {
			if !apierrors.IsForbidden(err) {
				t.Fatalf("%s: create: %v, want it refused", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: create: %v", tc.name, err)
		}
		names[i] = got.Name
	}
	conditionOf := func(name string, typ certificatesv1.RequestConditionType) (bool, string) {
		csr, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range csr.Status.Conditions {
			if c.Type == typ {
				return true, c.Reason
			}
		}
		return false, ""
	}
	approvedOf := func(name string) (bool, string) { return conditionOf(name, certificatesv1.CertificateApproved) }
	for i, tc := range tests {
		switch tc.want {
		case approved:
			controllertest.Eventually(t, tc.name+" approved", func() (bool, error) {
				ok, reason := approvedOf(names[i])
				return ok && reason == "AutoApproved", nil
			})
		case denied:
			controllertest.Eventually(t, tc.name+" denied", func() (bool, error) {
				ok, reason := conditionOf(names[i], certificatesv1.CertificateDenied)
				return ok && reason == csrapproving.DeniedReason, nil
			})
		}
	}
	// The approvals above were processed; give the rest a moment more.
	time.Sleep(300 * time.Millisecond)
	for i, tc := range tests {
		if tc.want == refused {
			continue
		}
		if ok, _ := approvedOf(names[i]); ok != (tc.want == approved) {
			t.Errorf("%s: approved %v, want %v", tc.name, ok, tc.want == approved)
		}
	}
}

// TestServingWaitsForNode: a serving request made before the Node exists
// is approved once the Node reports the addresses.
func TestServingWaitsForNode(t *testing.T) {
	cfg := controllertest.StartServer(t)
	admin := controllertest.Clientset(t, cfg)
	c, err := csrapproving.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Run(t, c, 1)
	ctx := context.Background()
	got, err := as(t, cfg, nodeUser("late")).CertificatesV1().CertificateSigningRequests().Create(ctx,
		request(t, certificatesv1.KubeletServingSignerName, &x509.CertificateRequest{Subject: nodesSubject("late"),
			IPAddresses: []net.IP{net.ParseIP("10.4.4.4")}}, servingUsages...), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	isApproved := func() (bool, error) {
		csr, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, got.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(csr.Status.Conditions) > 0 && csr.Status.Conditions[0].Type == certificatesv1.CertificateApproved, nil
	}
	time.Sleep(300 * time.Millisecond)
	if ok, _ := isApproved(); ok {
		t.Fatal("approved before the node existed")
	}
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Status: corev1.NodeStatus{
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.4.4.4"}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "approval after the node registered", isApproved)
}
