package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/pki"
)

// TestRestartAddsKubeletServingCA: a server restarted on a data directory
// from before the kubelet-serving CA makes one, keeps the cluster CA and
// the admin kubeconfig working, and hands its node serving certificates
// from the new CA.
func TestRestartAddsKubeletServingCA(t *testing.T) {
	dir := t.TempDir()
	start := func() (*Server, ComponentEnv, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		envs := make(chan ComponentEnv, 1)
		s, err := Start(ctx, Options{DataDir: dir, BindAddress: "127.0.0.1", Port: 0, InMemory: true,
			Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
			Components: []Component{func(_ context.Context, env ComponentEnv) error { envs <- env; return nil }}})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return s, <-envs, func() { cancel(); s.Wait() }
	}
	s1, _, stop := start()
	first := s1.PKI
	stop()
	for _, f := range []string{"kubelet-serving-ca.crt", "kubelet-serving-ca.key"} {
		if err := os.Remove(filepath.Join(dir, "pki", f)); err != nil {
			t.Fatal(err)
		}
	}
	s2, env, stop := start()
	t.Cleanup(stop)
	if !bytes.Equal(s2.PKI.CAPEM, first.CAPEM) || s2.PKI.KubeletServingCACert == nil || s2.PKI.KubeletServingCACert.Equal(first.KubeletServingCACert) {
		t.Fatal("the restart did not keep the cluster CA and make a new kubelet-serving CA")
	}
	if _, err := os.Stat(filepath.Join(dir, "pki", "kubelet-serving-ca.key")); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s2.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("the admin kubeconfig after the restart: %v", err)
	}
	certPEM, _, err := env.IssueServingCert([]string{"n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !env.KubeletServingCACert.Equal(s2.PKI.KubeletServingCACert) {
		t.Fatal("the components were given another kubelet-serving CA")
	}
	cert, err := pki.ParseCertPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if cert.CheckSignatureFrom(s2.PKI.KubeletServingCACert) != nil || cert.CheckSignatureFrom(s2.PKI.CACert) == nil {
		t.Fatal("the server's node gets serving certificates from another CA than the kubelet-serving CA")
	}
}
