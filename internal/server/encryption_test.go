package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/storage/etcd"
)

// TestSecretsEncryptedAtRest: a server makes an encryption key at first
// start (its configuration file 0600) and stores Secrets encrypted with
// it, ConfigMaps not; restarted with a new key first, it still reads the
// Secrets, and an unchanged replace rewrites one with the new key.
func TestSecretsEncryptedAtRest(t *testing.T) {
	dataDir := t.TempDir()
	start := func(config string) (*kubernetes.Clientset, func()) {
		return startOn(t, Options{DataDir: dataDir, EncryptionProviderConfig: config})
	}
	stored := func(key string) string {
		t.Helper()
		sock, _ := filepath.Abs(filepath.Join(dataDir, "etcd.sock"))
		st, err := etcd.Dial([]string{"unix://" + sock}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		kv, err := st.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return string(kv.Value)
	}
	ctx := context.Background()
	cs, stop := start("")
	generated := filepath.Join(dataDir, generatedEncryptionConfig)
	if fi, err := os.Stat(generated); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the generated configuration: %v, %v", fi, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"password": "hunter2-plaintext"}}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "visible"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := stored("/registry/secrets/default/s"); !strings.HasPrefix(v, "k8s:enc:aescbc:v1:key1:") || strings.Contains(v, "hunter2") {
		t.Errorf("the Secret in etcd: %.60q", v)
	}
	if v := stored("/registry/configmaps/default/c"); !strings.Contains(v, "visible") {
		t.Errorf("the ConfigMap in etcd: %.60q", v)
	}
	stop()

	// Rotation: a new key first, the old one still listed.
	old, err := os.ReadFile(generated)
	if err != nil {
		t.Fatal(err)
	}
	rotated := strings.Replace(string(old), "      - name: key1", "      - name: key2\n        secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n      - name: key1", 1)
	config := filepath.Join(t.TempDir(), "rotated.yaml")
	if err := os.WriteFile(config, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	cs, stop = start(config)
	defer stop()
	got, err := cs.CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
	if err != nil || string(got.Data["password"]) != "hunter2-plaintext" {
		t.Fatalf("the Secret after the rotation: %v, %v", got, err)
	}
	if _, err := cs.CoreV1().Secrets("default").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := stored("/registry/secrets/default/s"); !strings.HasPrefix(v, "k8s:enc:aescbc:v1:key2:") {
		t.Errorf("the Secret after an unchanged replace: %.40q, want it rewritten with key2", v)
	}
}
