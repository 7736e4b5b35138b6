package pki

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var allFiles = []string{caCertFile, caKeyFile, kubeletServingCACertFile, kubeletServingCAKeyFile, servingCertFile, servingKeyFile, adminCertFile, adminKeyFile, saKeyFile, saPubFile}

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, f := range allFiles {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		m[f] = data
	}
	return m
}

func TestCreateThenLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	b1, err := LoadOrCreate(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := readAll(t, dir)

	// Modes.
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	for _, f := range allFiles {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o644)
		if filepath.Ext(f) == ".key" {
			want = 0o600
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode = %v, want %v", f, fi.Mode().Perm(), want)
		}
	}

	// The CA and the issued certificates.
	ca := b1.CACert
	if !ca.IsCA || ca.Subject.CommonName != CACommonName || ca.NotAfter.Sub(ca.NotBefore) < 10*365*24*time.Hour {
		t.Errorf("CA: IsCA=%v CN=%q validity=%v", ca.IsCA, ca.Subject.CommonName, ca.NotAfter.Sub(ca.NotBefore))
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	serving := parseCert(t, b1.ServingCertPEM)
	for _, name := range []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} {
		if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("serving cert for %s: %v", name, err)
		}
	}
	if h, err := os.Hostname(); err == nil && net.ParseIP(h) == nil && !slices.Contains(serving.DNSNames, h) {
		t.Errorf("serving cert DNS names %v lack hostname %q", serving.DNSNames, h)
	}
	for _, ip := range []string{"127.0.0.1", "::1"} {
		if !slices.ContainsFunc(serving.IPAddresses, net.ParseIP(ip).Equal) {
			t.Errorf("serving cert IPs %v lack %s", serving.IPAddresses, ip)
		}
	}
	admin := parseCert(t, b1.AdminCertPEM)
	if admin.Subject.CommonName != AdminUser || !slices.Equal(admin.Subject.Organization, []string{AdminGroup}) {
		t.Errorf("admin subject = %v", admin.Subject)
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin cert: %v", err)
	}
	if admin.SerialNumber.Cmp(serving.SerialNumber) == 0 || admin.SerialNumber.BitLen() < 64 {
		t.Errorf("serials not random: %v %v", admin.SerialNumber, serving.SerialNumber)
	}

	// Loading again regenerates nothing.
	b2, err := LoadOrCreate(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for f, data := range readAll(t, dir) {
		if !bytes.Equal(data, files[f]) {
			t.Errorf("%s changed on reload", f)
		}
	}
	if !b2.CACert.Equal(b1.CACert) || !bytes.Equal(b2.CAPEM, b1.CAPEM) ||
		!bytes.Equal(b2.ServingCertPEM, b1.ServingCertPEM) || !bytes.Equal(b2.ServingKeyPEM, b1.ServingKeyPEM) ||
		!bytes.Equal(b2.AdminCertPEM, b1.AdminCertPEM) || !bytes.Equal(b2.AdminKeyPEM, b1.AdminKeyPEM) {
		t.Error("reloaded bundle differs")
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if !b2.CAKey.Public().(equaler).Equal(b1.CAKey.Public()) {
		t.Error("CA key differs")
	}
	if !b2.ServiceAccountKey.Public().(equaler).Equal(b1.ServiceAccountKey.Public()) {
		t.Error("service-account key differs")
	}
}

func TestMissingSANReissues(t *testing.T) {
	dir := t.TempDir()
	b1, err := LoadOrCreate(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	svcIP := net.ParseIP("10.96.0.1")
	b2, err := LoadOrCreate(dir, Options{ExtraIPs: []net.IP{svcIP}, ExtraDNSNames: []string{"api.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1.CAPEM, b2.CAPEM) {
		t.Fatal("CA changed")
	}
	if bytes.Equal(b1.ServingCertPEM, b2.ServingCertPEM) {
		t.Fatal("serving cert not re-issued")
	}
	if !bytes.Equal(b1.AdminCertPEM, b2.AdminCertPEM) {
		t.Error("admin cert re-issued needlessly")
	}
	roots := x509.NewCertPool()
	roots.AddCert(b2.CACert)
	c := parseCert(t, b2.ServingCertPEM)
	for _, host := range []string{"10.96.0.1", "api.example.com", "kubernetes.default.svc"} {
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("re-issued serving cert for %s: %v", host, err)
		}
	}
	// The same request again is satisfied by what is on disk.
	b3, err := LoadOrCreate(dir, Options{ExtraIPs: []net.IP{svcIP}, ExtraDNSNames: []string{"api.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b3.ServingCertPEM, b2.ServingCertPEM) {
		t.Error("serving cert re-issued again")
	}
}

func TestExpiringLeavesReissued(t *testing.T) {
	dir := t.TempDir()
	past := time.Now().Add(-2 * 365 * 24 * time.Hour)
	b1, err := LoadOrCreate(dir, Options{Now: func() time.Time { return past }})
	if err != nil {
		t.Fatal(err)
	}
	if got := parseCert(t, b1.AdminCertPEM).NotBefore; !got.Before(past) || got.Before(past.Add(-time.Hour)) {
		t.Errorf("admin NotBefore = %v, want just before injected now %v", got, past)
	}
	b2, err := LoadOrCreate(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1.CAPEM, b2.CAPEM) {
		t.Error("CA changed")
	}
	if bytes.Equal(b1.AdminCertPEM, b2.AdminCertPEM) || bytes.Equal(b1.ServingCertPEM, b2.ServingCertPEM) {
		t.Error("expired leaf certificates not re-issued")
	}
}

func TestHalfCAIsAnError(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadOrCreate(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, caKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(dir, Options{}); err == nil {
		t.Fatal("LoadOrCreate replaced a CA whose key is missing")
	}
}

// handshake runs one TLS handshake over 127.0.0.1 between a server using
// b.ServerTLSConfig and a client presenting clientCert (if any). It returns
// the server's view of the connection and the server's handshake error.
func handshake(t *testing.T, b *Bundle, clientCert *tls.Certificate) (tls.ConnectionState, error) {
	t.Helper()
	cfg, err := b.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		state tls.ConnectionState
		err   error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer conn.Close()
		tc := conn.(*tls.Conn)
		err = tc.Handshake()
		if err == nil {
			_, err = tc.Write([]byte("ok"))
		}
		done <- result{tc.ConnectionState(), err}
	}()

	roots := x509.NewCertPool()
	roots.AddCert(b.CACert)
	ccfg := &tls.Config{RootCAs: roots}
	if clientCert != nil {
		ccfg.Certificates = []tls.Certificate{*clientCert}
	}
	conn, err := tls.Dial("tcp", ln.Addr().String(), ccfg)
	if err == nil {
		// With TLS 1.3 the server checks the client certificate after the
		// client's handshake is done; reading surfaces its verdict.
		_, _ = io.ReadFull(conn, make([]byte, 2))
		conn.Close()
	}
	r := <-done
	return r.state, r.err
}

func TestHandshake(t *testing.T) {
	b, err := LoadOrCreate(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("admin", func(t *testing.T) {
		cert, err := tls.X509KeyPair(b.AdminCertPEM, b.AdminKeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		st, err := handshake(t, b, &cert)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.PeerCertificates) == 0 {
			t.Fatal("server saw no client certificate")
		}
		subj := st.PeerCertificates[0].Subject
		if subj.CommonName != AdminUser || !slices.Equal(subj.Organization, []string{AdminGroup}) {
			t.Errorf("server saw %v", subj)
		}
		if len(st.VerifiedChains) == 0 {
			t.Error("client certificate not verified")
		}
	})

	t.Run("issued client", func(t *testing.T) {
		certPEM, keyPEM, err := b.IssueClientCert("alice", []string{"dev", "ops"})
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		if d := cert.Leaf.NotAfter.Sub(cert.Leaf.NotBefore); d < 365*24*time.Hour {
			t.Errorf("validity %v, want a year", d)
		}
		st, err := handshake(t, b, &cert)
		if err != nil {
			t.Fatal(err)
		}
		if subj := st.PeerCertificates[0].Subject; subj.CommonName != "alice" || !slices.Equal(subj.Organization, []string{"dev", "ops"}) {
			t.Errorf("server saw %v", subj)
		}
	})

	t.Run("no client cert", func(t *testing.T) {
		st, err := handshake(t, b, nil)
		if err != nil {
			t.Fatalf("client certificates must be optional: %v", err)
		}
		if len(st.PeerCertificates) != 0 {
			t.Errorf("server saw %d peer certificates", len(st.PeerCertificates))
		}
	})

	t.Run("foreign CA", func(t *testing.T) {
		other, err := LoadOrCreate(t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(other.AdminCertPEM, other.AdminKeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		_, err = handshake(t, b, &cert)
		t.Logf("server: %v", err)
		if err == nil {
			t.Fatal("server accepted a client certificate from another CA")
		}
	})
}

func TestIssueServingCert(t *testing.T) {
	b, err := LoadOrCreate(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := b.IssueServingCert([]string{"node-1"}, []net.IP{net.ParseIP("192.0.2.7")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(b.CACert)
	c := parseCert(t, certPEM)
	for _, host := range []string{"node-1", "192.0.2.7"} {
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("serving cert usable for client auth")
	}
	if _, _, err := b.IssueServingCert(nil, nil); err == nil {
		t.Error("serving cert without SANs issued")
	}
}

// TestKubeletServingCA: node agents' serving certificates come from a CA of
// their own, which the cluster CA's clients do not trust, and a data
// directory made before it existed gets one at its next start, keeping the
// cluster CA and what it signed.
func TestKubeletServingCA(t *testing.T) {
	dir := t.TempDir()
	b1, err := LoadOrCreate(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sca := b1.KubeletServingCACert
	if !sca.IsCA || sca.Subject.CommonName != KubeletServingCACommonName || sca.Equal(b1.CACert) ||
		b1.KubeletServingCAKey.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(b1.CAKey.Public()) {
		t.Fatalf("kubelet-serving CA %q (IsCA %v) is not a CA of its own", sca.Subject.CommonName, sca.IsCA)
	}
	certPEM, keyPEM, err := b1.IssueKubeletServingCert([]string{"node-1"}, []net.IP{net.ParseIP("192.0.2.7")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	c := parseCert(t, certPEM)
	servingRoots, clusterRoots := x509.NewCertPool(), x509.NewCertPool()
	servingRoots.AddCert(sca)
	clusterRoots.AddCert(b1.CACert)
	if _, err := c.Verify(x509.VerifyOptions{Roots: servingRoots, DNSName: "192.0.2.7"}); err != nil {
		t.Errorf("against the kubelet-serving CA: %v", err)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: clusterRoots, DNSName: "node-1"}); err == nil {
		t.Error("a node's serving certificate verifies against the cluster CA")
	}
	if bytes.Contains(b1.CAPEM, b1.KubeletServingCAPEM) {
		t.Error("the cluster CA PEM carries the kubelet-serving CA")
	}

	// An older directory: no kubelet-serving CA yet.
	for _, f := range []string{kubeletServingCACertFile, kubeletServingCAKeyFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	b2, err := LoadOrCreate(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b2.CAPEM, b1.CAPEM) || !bytes.Equal(b2.ServingCertPEM, b1.ServingCertPEM) || !bytes.Equal(b2.AdminCertPEM, b1.AdminCertPEM) {
		t.Error("the cluster CA or its certificates changed when the kubelet-serving CA was added")
	}
	if b2.KubeletServingCACert == nil || b2.KubeletServingCACert.Equal(sca) {
		t.Fatal("no new kubelet-serving CA")
	}
	b3, err := LoadOrCreate(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !b3.KubeletServingCACert.Equal(b2.KubeletServingCACert) {
		t.Error("kubelet-serving CA replaced on reload")
	}
	// Half of it is an error, as for the cluster CA.
	if err := os.Remove(filepath.Join(dir, kubeletServingCAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(dir, Options{}); err == nil {
		t.Error("a kubelet-serving CA without its key was accepted")
	}
}

func TestWriteKubeconfig(t *testing.T) {
	b, err := LoadOrCreate(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := b.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client cert", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = tlsCfg
	srv.StartTLS()
	defer srv.Close()

	path := filepath.Join(t.TempDir(), "kube", "config")
	if err := WriteKubeconfig(path, srv.URL, b.CAPEM, b.AdminCertPEM, b.AdminKeyPEM); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig mode: %v, %v", fi.Mode().Perm(), err)
	}
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if raw.CurrentContext != "plainkube" || raw.Contexts["plainkube"] == nil ||
		raw.Contexts["plainkube"].Cluster != "plainkube" || raw.Contexts["plainkube"].AuthInfo != "admin" {
		t.Errorf("kubeconfig contexts: current %q, %+v", raw.CurrentContext, raw.Contexts)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != srv.URL {
		t.Errorf("Host = %q, want %q", cfg.Host, srv.URL)
	}
	if !bytes.Equal(cfg.TLSClientConfig.CAData, b.CAPEM) ||
		!bytes.Equal(cfg.TLSClientConfig.CertData, b.AdminCertPEM) ||
		!bytes.Equal(cfg.TLSClientConfig.KeyData, b.AdminKeyPEM) {
		t.Error("rest.Config TLS data differs from the bundle")
	}

	// The rest.Config really authenticates as the admin against a server
	// using ServerTLSConfig.
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != AdminUser {
		t.Errorf("got %d %q, want 200 %q", resp.StatusCode, body, AdminUser)
	}
}
