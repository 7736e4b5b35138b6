package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/pki"
	"plainkube.dev/plainkube/internal/storage/etcd"
)

// TestExternalEtcdOverMutualTLS: a server reaches an external etcd that
// takes clients with a certificate of its CA only (--etcd-cafile,
// --etcd-certfile, --etcd-keyfile); a client without one is refused.
func TestExternalEtcdOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.LoadOrCreate(filepath.Join(dir, "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	servingCert, servingKey, err := ca.IssueServingCert([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey, err := ca.IssueClientCert("plainkube-etcd-client", nil)
	if err != nil {
		t.Fatal(err)
	}
	caFile := write("ca.crt", ca.CAPEM)
	serverTLS := transport.TLSInfo{CertFile: write("etcd.crt", servingCert), KeyFile: write("etcd.key", servingKey), TrustedCAFile: caFile, ClientCertAuth: true}
	e, err := etcd.StartEmbedded(filepath.Join(dir, "etcd"), etcd.WithoutFsync(), etcd.WithConfig(func(c *embed.Config) {
		u := url.URL{Scheme: "https", Host: "127.0.0.1:0"}
		c.ListenClientUrls, c.AdvertiseClientUrls, c.ClientTLSInfo = []url.URL{u}, []url.URL{u}, serverTLS
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	endpoint := e.Endpoint()
	_, cfg := startServerWith(t, Options{EtcdServers: []string{endpoint},
		EtcdCAFile: caFile, EtcdCertFile: write("client.crt", clientCert), EtcdKeyFile: write("client.key", clientKey)})
	if _, err := clientset(t, cfg).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("served over mutual TLS: %v", err)
	}

	// Without a client certificate the handshake fails.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CAPEM)
	u, _ := url.Parse(endpoint)
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err == nil {
		// TLS 1.3 reports a missing certificate on the first read.
		conn.Write([]byte("x"))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	if err == nil {
		t.Error("a client without a certificate was served by etcd")
	}
}
