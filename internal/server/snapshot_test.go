package server

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/storage/etcd"
)

// TestSnapshotRestore: a snapshot of a running server's embedded etcd,
// restored into a fresh data directory (with the old certificates and
// encryption key), starts
// a server holding every object, at revisions past every one the old
// server handed out.
func TestSnapshotRestore(t *testing.T) {
	oldDir := filepath.Join(t.TempDir(), "old")
	cs, stop := startOn(t, Options{DataDir: oldDir})
	ctx := context.Background()
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(t.TempDir(), "snap.db")
	sock, _ := filepath.Abs(filepath.Join(oldDir, "etcd.sock"))
	if err := etcd.SaveSnapshot(ctx, "unix://"+sock, snap); err != nil {
		t.Fatal(err)
	}
	stop()

	newDir := filepath.Join(t.TempDir(), "new")
	if err := etcd.RestoreSnapshot(snap, filepath.Join(newDir, "etcd")); err != nil {
		t.Fatal(err)
	}
	if err := etcd.RestoreSnapshot(snap, filepath.Join(newDir, "etcd")); err == nil {
		t.Error("a restore over existing etcd data succeeded")
	}
	if err := os.CopyFS(filepath.Join(newDir, "pki"), os.DirFS(filepath.Join(oldDir, "pki"))); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(oldDir, generatedEncryptionConfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(newDir, generatedEncryptionConfig), key, 0o600); err != nil {
		t.Fatal(err)
	}
	cs, stop = startOn(t, Options{DataDir: newDir})
	defer stop()
	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" || got.UID != cm.UID {
		t.Fatalf("after the restore: %v, %v", got, err)
	}
	if s, err := cs.CoreV1().Secrets("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil || string(s.Data["k"]) != "v" {
		t.Errorf("the Secret after the restore (with the old key): %v, %v", s, err)
	}
	list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv, _ := strconv.ParseInt(list.ResourceVersion, 10, 64); rv < 1_000_000_000 {
		t.Errorf("revision after the restore %d: not moved past every one handed out before", rv)
	}
}

// startOn starts a server with opts on opts.DataDir (its embedded etcd)
// and a loopback port; stop stops it and waits.
func startOn(t *testing.T, opts Options) (cs *kubernetes.Clientset, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts.BindAddress = "127.0.0.1"
	s, err := Start(ctx, opts)
	if err != nil {
		cancel()
		t.Fatalf("start: %v", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	return clientset(t, cfg), func() { cancel(); s.Wait() }
}
