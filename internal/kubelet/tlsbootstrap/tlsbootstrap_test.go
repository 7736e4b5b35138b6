package tlsbootstrap_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/controller/certificates/csrapproving"
	"plainkube.dev/plainkube/internal/controller/certificates/csrsigning"
	"plainkube.dev/plainkube/internal/controller/controllertest"
	"plainkube.dev/plainkube/internal/kubelet/tlsbootstrap"
	"plainkube.dev/plainkube/internal/pki"
	"plainkube.dev/plainkube/internal/server"
)

// startServer runs a control plane with the certificate controllers.
func startServer(t *testing.T) *server.Server {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := server.Start(ctx, server.Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", Port: 0, InMemory: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Wait() })
	approver, err := csrapproving.New(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := csrsigning.New(s.LoopbackConfig(), csrsigning.CA{Cert: s.PKI.CACert, Key: s.PKI.CAKey},
		&csrsigning.CA{Cert: s.PKI.KubeletServingCACert, Key: s.PKI.KubeletServingCAKey})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Run(t, approver, 1)
	controllertest.Run(t, signer, 1)
	return s
}

// TestJoin bootstraps a node against a real server over HTTPS: the CA
// from cluster-info checked against the pin, a client certificate through
// the bootstrap token, a serving certificate for the node's address, and
// the kept credentials reused on a restart without the token.
func TestJoin(t *testing.T) {
	s := startServer(t)
	if !strings.HasPrefix(s.JoinURL, "https://127.0.0.1:") || s.JoinToken.Token == "" || !strings.HasPrefix(s.CAHash, "sha256:") {
		t.Fatalf("join command %q", s.JoinCommand())
	}
	ctx := context.Background()
	dir := t.TempDir()
	o := tlsbootstrap.Options{Server: s.JoinURL, Token: s.JoinToken.Token, CACertHash: s.CAHash, DataDir: dir, NodeName: "n2",
		Logger: controllertest.Logger(t)}

	// No pin and no CA file: refused rather than trusting the first CA seen.
	noPin := o
	noPin.CACertHash = ""
	if _, err := tlsbootstrap.Bootstrap(ctx, noPin); err == nil || !strings.Contains(err.Error(), "--ca-cert-hash") {
		t.Fatalf("bootstrap without a pin: %v", err)
	}
	wrongPin := o
	wrongPin.CACertHash = "sha256:" + strings.Repeat("0", 64)
	if _, err := tlsbootstrap.Bootstrap(ctx, wrongPin); err == nil || !strings.Contains(err.Error(), "hash") {
		t.Fatalf("bootstrap with a wrong pin: %v", err)
	}
	badToken := o
	badToken.Token = "abcdef.0000000000000000"
	badToken.DataDir = t.TempDir()
	if _, err := tlsbootstrap.Bootstrap(ctx, badToken); err == nil {
		t.Fatal("bootstrap with a wrong token succeeded")
	}

	creds, err := tlsbootstrap.Bootstrap(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(creds.Config)
	who, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := who.Status.UserInfo; u.Username != "system:node:n2" || !contains(u.Groups, "system:nodes") {
		t.Fatalf("joined as %+v", u)
	}
	// The node may register itself, and may not delete other nodes.
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}, Status: corev1.NodeStatus{
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}); err == nil {
		t.Fatal("a node deleted a Node")
	}
	// Its serving certificate: only the SANs that are the node's.
	issue := tlsbootstrap.ServingIssuer(creds.Config, creds.CAPEM, dir, "n2", nil)
	certPEM, keyPEM, err := issue([]string{"n2", "localhost"}, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.200.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "n2" || len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Fatalf("serving certificate SANs %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if leaf.CheckSignatureFrom(s.PKI.KubeletServingCACert) != nil || leaf.CheckSignatureFrom(s.PKI.CACert) == nil {
		t.Fatal("serving certificate not signed by the kubelet-serving CA alone")
	}

	// A restart reuses what is kept: no token, no new requests.
	before, _ := kubernetes.NewForConfigOrDie(s.LoopbackConfig()).CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	again := o
	again.Token, again.CACertHash = "", ""
	creds2, err := tlsbootstrap.Bootstrap(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if creds2.ClientFile != creds.ClientFile || creds2.Config.CertFile != creds.ClientFile {
		t.Fatal("client certificate not reused")
	}
	certPEM2, _, err := tlsbootstrap.ServingIssuer(creds2.Config, creds2.CAPEM, dir, "n2", nil)([]string{"n2"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil || string(certPEM2) != string(certPEM) {
		t.Fatalf("serving certificate not reused (err %v)", err)
	}
	after, _ := kubernetes.NewForConfigOrDie(s.LoopbackConfig()).CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if len(after.Items) != len(before.Items) || len(before.Items) != 2 {
		t.Fatalf("CSRs before the restart %d, after %d; want 2 and 2", len(before.Items), len(after.Items))
	}
	// The key files are private.
	for _, f := range []string{"kubelet-client-current.pem", "kubelet-serving.key"} {
		st, err := os.Stat(filepath.Join(dir, "pki", f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, st.Mode(), err)
		}
	}
	// The CA kept must keep matching a pin given later.
	if b, _ := os.ReadFile(filepath.Join(dir, "pki", "ca.crt")); !strings.Contains(string(b), "BEGIN CERTIFICATE") {
		t.Fatal("CA not kept")
	}

	// Rotation: the node renews its own client certificate (selfnodeclient).
	old, _ := os.ReadFile(creds.ClientFile)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	first := true
	go tlsbootstrap.RotateClient(rctx, creds, "n2", func(*x509.Certificate, time.Time) time.Duration {
		if first {
			first = false
			return 0
		}
		return time.Hour
	}, nil)
	var renewed *x509.Certificate
	controllertest.Eventually(t, "the client certificate renewed", func() (bool, error) {
		b, err := os.ReadFile(creds.ClientFile)
		if err != nil || string(b) == string(old) {
			return false, err
		}
		block, _ := pem.Decode(b)
		renewed, err = x509.ParseCertificate(block.Bytes)
		return err == nil, err
	})
	stop()
	if renewed.Subject.CommonName != "system:node:n2" || renewed.CheckSignatureFrom(s.PKI.CACert) != nil {
		t.Fatalf("renewed certificate %v", renewed.Subject)
	}
	csrs, _ := kubernetes.NewForConfigOrDie(s.LoopbackConfig()).CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	selfClient := 0
	for _, c := range csrs.Items {
		if c.Spec.Username == "system:node:n2" && c.Spec.SignerName == "kubernetes.io/kube-apiserver-client-kubelet" {
			selfClient++
		}
	}
	if len(csrs.Items) != 3 || selfClient != 1 {
		t.Fatalf("%d CSRs after renewal, %d of them the node's own client request", len(csrs.Items), selfClient)
	}
	if _, err := kubernetes.NewForConfigOrDie(creds.Config).CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{}); err != nil {
		t.Fatalf("the node's client after renewal: %v", err)
	}
}

// TestServingCertificateTrust: a joined node that writes the API server's
// names and ClusterIP into its own status gets its serving request for
// them denied; the serving certificate it can get verifies against the
// kubelet-serving CA only, not against the CA every client of the API
// server trusts; and a serving certificate kept from before the server had
// a kubelet-serving CA (signed by the cluster CA) is asked for anew.
func TestServingCertificateTrust(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	dir := t.TempDir()
	creds, err := tlsbootstrap.Bootstrap(ctx, tlsbootstrap.Options{Server: s.JoinURL, Token: s.JoinToken.Token, CACertHash: s.CAHash,
		DataDir: dir, NodeName: "evil", Logger: controllertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	asNode := kubernetes.NewForConfigOrDie(creds.Config)
	node, err := asNode.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "evil"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
		{Type: corev1.NodeInternalIP, Address: "10.96.0.1"}, {Type: corev1.NodeHostName, Address: "kubernetes.default.svc"}}
	if _, err := asNode.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	issue := tlsbootstrap.ServingIssuer(creds.Config, creds.CAPEM, dir, "evil", controllertest.Logger(t))
	for _, tc := range []struct {
		names []string
		ips   []net.IP
		want  string
	}{
		{[]string{"evil", "kubernetes.default.svc"}, []net.IP{net.ParseIP("127.0.0.1")}, "kubernetes.default.svc is a name of the API server's Service"},
		{[]string{"evil"}, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}, "10.96.0.1 is in the Service range 10.96.0.0/12"},
	} {
		if _, _, err := issue(tc.names, tc.ips); err == nil || !strings.Contains(err.Error(), "Denied: ReservedSubjectAltName") ||
			!strings.Contains(err.Error(), tc.want) {
			t.Fatalf("serving certificate for %v %v: %v, want it denied because %s", tc.names, tc.ips, err, tc.want)
		}
	}
	csrs, err := kubernetes.NewForConfigOrDie(s.LoopbackConfig()).CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range csrs.Items {
		if c.Spec.SignerName == "kubernetes.io/kubelet-serving" && (len(c.Status.Certificate) > 0 || !hasCondition(c.Status.Conditions, "Denied")) {
			t.Fatalf("serving request %s: %+v", c.Name, c.Status)
		}
	}

	// What it can get: its own name and address, from the kubelet-serving CA.
	certPEM, _, err := issue([]string{"evil"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := pki.ParseCertPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	servingRoots := x509.NewCertPool()
	servingRoots.AddCert(s.PKI.KubeletServingCACert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: servingRoots, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("against the kubelet-serving CA: %v", err)
	}
	// The CAs clients of the API server trust: the admin kubeconfig's,
	// cluster-info's (what joining nodes pin), and a joined node's.
	admin, err := clientcmd.LoadFromFile(s.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	info, err := kubernetes.NewForConfigOrDie(s.LoopbackConfig()).CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	infoConfig, err := clientcmd.Load([]byte(info.Data["kubeconfig"]))
	if err != nil {
		t.Fatal(err)
	}
	trusted := map[string][]byte{"joined node": creds.CAPEM}
	for name, c := range admin.Clusters {
		trusted["admin kubeconfig "+name] = c.CertificateAuthorityData
	}
	for name, c := range infoConfig.Clusters {
		trusted["cluster-info "+name] = c.CertificateAuthorityData
	}
	for what, caPEM := range trusted {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			t.Fatalf("%s: no CA", what)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool}); err == nil {
			t.Errorf("a node's serving certificate verifies against the CA of the %s", what)
		}
		if pool.Equal(servingRoots) || strings.Contains(string(caPEM), string(s.PKI.KubeletServingCAPEM)) {
			t.Errorf("the %s trusts the kubelet-serving CA", what)
		}
	}

	// A serving certificate of the cluster CA kept from an older server.
	oldCert, oldKey, err := s.PKI.IssueServingCert([]string{"evil"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string][]byte{"kubelet-serving.crt": oldCert, "kubelet-serving.key": oldKey} {
		if err := os.WriteFile(filepath.Join(dir, "pki", f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	renewed, _, err := issue([]string{"evil"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	if string(renewed) == string(oldCert) {
		t.Fatal("the cluster CA's serving certificate was kept")
	}
	if c, _ := pki.ParseCertPEM(renewed); c == nil || c.CheckSignatureFrom(s.PKI.KubeletServingCACert) != nil {
		t.Fatal("the new serving certificate is not the kubelet-serving CA's")
	}
}

func hasCondition(conds []certificatesv1.CertificateSigningRequestCondition, t string) bool {
	for _, c := range conds {
		if string(c.Type) == t {
			return true
		}
	}
	return false
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func TestRotateAfter(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &x509.Certificate{NotBefore: start, NotAfter: start.Add(100 * time.Hour)}
	for range 50 {
		d := tlsbootstrap.RotateAfter(c, start)
		if d < 70*time.Hour || d > 90*time.Hour {
			t.Fatalf("rotation after %v, want between 70%% and 90%% of 100h", d)
		}
	}
	if d := tlsbootstrap.RotateAfter(c, start.Add(95*time.Hour)); d != 0 {
		t.Fatalf("overdue rotation waits %v", d)
	}
}
