package etcd_test

import (
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/etcd"
	"plainkube.dev/plainkube/internal/storage/storagetest"
)

func startEmbedded(t *testing.T) *etcd.Embedded {
	t.Helper()
	start := time.Now()
	e, err := etcd.StartEmbedded(t.TempDir(), etcd.WithoutFsync())
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Logf("embedded etcd started in %v at %s", time.Since(start), e.Endpoint())
	t.Cleanup(func() {
		start := time.Now()
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		t.Logf("embedded etcd stopped in %v", time.Since(start))
	})
	return e
}

func TestSuite(t *testing.T) {
	storagetest.RunSuite(t, func(t *testing.T) storage.Interface {
		s := startEmbedded(t).Store()
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestEmbeddedRestart checks that data survives a restart on the same
// directory (the loopback URLs get new ports each time) and that Dial
// reaches the embedded server.
func TestEmbeddedRestart(t *testing.T) {
	dir := t.TempDir()
	e, err := etcd.StartEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := e.Store()
	rev, err := s.Create(t.Context(), "/registry/x", []byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = startEmbeddedIn(t, dir)
	d, err := etcd.Dial([]string{e.Endpoint()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	kv, err := d.Get(t.Context(), "/registry/x")
	if err != nil || string(kv.Value) != "kept" || kv.ModRevision != rev {
		t.Fatalf("after restart: Get = %+v, %v; want value kept at %d", kv, err, rev)
	}
}

func startEmbeddedIn(t *testing.T, dir string) *etcd.Embedded {
	t.Helper()
	e, err := etcd.StartEmbedded(dir)
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
