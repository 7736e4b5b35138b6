package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/pki"
)

// TestJoinToken: the server keeps one bootstrap token across restarts (file
// 0600 and Secret), it authenticates as a bootstrapper over HTTPS, a
// wrong or deleted token does not, and cluster-info is public.
func TestJoinToken(t *testing.T) {
	dir := t.TempDir()
	start := func() *Server {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := Start(ctx, Options{DataDir: dir, BindAddress: "127.0.0.1", Port: 0, InMemory: true, JoinTokenTTL: time.Hour,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); s.Wait() })
		return s
	}
	s := start()
	if _, _, ok := auth.ParseBootstrapToken(s.JoinToken.Token); !ok || !s.JoinToken.New {
		t.Fatalf("join token %+v", s.JoinToken)
	}
	if left := time.Until(s.JoinToken.Expires); left < 50*time.Minute || left > time.Hour {
		t.Fatalf("join token expires in %v, want an hour", left)
	}
	want := "plainkube agent --server " + s.JoinURL + " --token " + s.JoinToken.Token + " --ca-cert-hash " + pki.CertHash(s.PKI.CACert)
	if s.JoinCommand() != want || !strings.HasPrefix(s.JoinURL, "https://127.0.0.1:") {
		t.Fatalf("join command %q", s.JoinCommand())
	}
	st, err := os.Stat(filepath.Join(dir, JoinTokenFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("join-token file: %v %v", st, err)
	}
	ctx := context.Background()
	pool := x509.NewCertPool()
	pool.AddCert(s.PKI.CACert)
	withToken := func(token string) kubernetes.Interface {
		return kubernetes.NewForConfigOrDie(&rest.Config{Host: s.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: s.PKI.CAPEM}})
	}
	boot := withToken(s.JoinToken.Token)
	if _, err := boot.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("bootstrapper lists CSRs: %v", err)
	}
	who, err := boot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := auth.ParseBootstrapToken(s.JoinToken.Token)
	if u := who.Status.UserInfo; u.Username != "system:bootstrap:"+id || strings.Join(u.Groups, ",") != "system:bootstrappers,"+NodeBootstrapGroup+",system:authenticated" {
		t.Fatalf("bootstrap user %+v", u)
	}
	if _, err := boot.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("a bootstrapper listed secrets")
	}
	if _, err := withToken(id+".0000000000000000").CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("a wrong token secret was accepted")
	}
	// cluster-info is readable without credentials and names the CA.
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := anon.Get(s.URL + "/api/v1/namespaces/kube-public/configmaps/cluster-info")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("anonymous cluster-info: %d %s", resp.StatusCode, body)
	}
	admin := kubernetes.NewForConfigOrDie(s.LoopbackConfig())
	cm, err := admin.CoreV1().ConfigMaps("kube-public").Get(ctx, ClusterInfoName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load([]byte(cm.Data[ClusterInfoKey]))
	if err != nil || len(kc.Clusters) != 1 {
		t.Fatalf("cluster-info kubeconfig: %v %v", kc, err)
	}
	for _, c := range kc.Clusters {
		if c.Server != s.JoinURL || string(c.CertificateAuthorityData) != string(s.PKI.CAPEM) {
			t.Fatalf("cluster-info: %+v", c)
		}
	}
	// Deleting the Secret revokes the token.
	name := auth.BootstrapTokenSecretPrefix + id
	if err := admin.CoreV1().Secrets("kube-system").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := boot.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("a deleted token was accepted")
	}
	// A restart keeps the same token (the in-memory store lost the
	// Secret: it is made again from the file).
	token := s.JoinToken
	s.cancel()
	s.Wait()
	s2 := start()
	if s2.JoinToken.Token != token.Token || s2.JoinToken.New || !s2.JoinToken.Expires.Equal(token.Expires) {
		t.Fatalf("token changed across a restart: %+v, then %+v", token, s2.JoinToken)
	}
	secrets := kubernetes.NewForConfigOrDie(s2.LoopbackConfig()).CoreV1().Secrets("kube-system")
	sec, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil || sec.Type != corev1.SecretTypeBootstrapToken || string(sec.Data["usage-bootstrap-authentication"]) != "true" ||
		string(sec.Data["auth-extra-groups"]) != NodeBootstrapGroup || string(sec.Data["expiration"]) != token.Expires.UTC().Format(time.RFC3339) {
		t.Fatalf("token secret after restart: %+v %v", sec, err)
	}
	// Removing the file replaces the token at the next start, and revokes
	// the old one: ensureJoinToken as a start runs it, on the same store.
	if err := os.Remove(filepath.Join(dir, JoinTokenFile)); err != nil {
		t.Fatal(err)
	}
	if err := ensureJoinTokenForTest(ctx, s2, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Get(ctx, name, metav1.GetOptions{}); err == nil {
		t.Fatal("the replaced token's Secret is still there")
	}
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: JoinTokenLabel + "=true"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("join token secrets after replacing it: %v %v", list, err)
	}
	// A token older than its TTL has expired: a start removes its Secret,
	// does not make it valid again, and gives no join command.
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, JoinTokenFile), old, old); err != nil {
		t.Fatal(err)
	}
	expired, err := ensureJoinToken(ctx, s2.LoopbackConfig(), dir, time.Hour)
	if err != nil || expired.Token != "" || expired.New || !expired.Expires.Before(time.Now()) {
		t.Fatalf("expired join token: %+v, %v", expired, err)
	}
	if list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: JoinTokenLabel + "=true"}); err != nil || len(list.Items) != 0 {
		t.Fatalf("an expired join token's Secret is still there: %v %v", list, err)
	}
}

func ensureJoinTokenForTest(ctx context.Context, s *Server, dir string) error {
	tok, err := ensureJoinToken(ctx, s.LoopbackConfig(), dir, time.Hour)
	if err == nil && tok.Token == s.JoinToken.Token {
		return fmt.Errorf("the token was not replaced")
	}
	return err
}
