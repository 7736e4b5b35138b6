package server

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// TestDataDirLocked: a data directory open to others is made 0700 at
// start, and the embedded etcd serves its clients on a unix socket inside
// it (the server's own storage goes through it).
func TestDataDirLocked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, Options{DataDir: dir, BindAddress: "127.0.0.1", Port: 0})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() { cancel(); s.Wait() }()
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("the data directory: %v %v, want 0700", info.Mode(), err)
	}
	sock, err := os.Stat(filepath.Join(dir, "etcd.sock"))
	if err != nil || sock.Mode().Type() != fs.ModeSocket {
		t.Fatalf("etcd's socket: %v %v", sock, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clientset(t, cfg).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("reading through etcd's socket: %v", err)
	}
}
