package etcd_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/cache"
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

// TestCacheOverEtcd runs the watch cache over real etcd: it follows writes,
// and confirms a revision written outside its prefix.
func TestCacheOverEtcd(t *testing.T) {
	s := startEmbedded(t).Store()
	ctx := t.Context()
	if _, err := s.Create(ctx, "/registry/pods/a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	c := cache.New(s, "/registry/pods/", cache.Options{})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(runCtx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	ch, err := c.Watch(ctx, "/registry/pods/", 0)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.Create(ctx, "/registry/pods/b", []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	if ev := storagetest.Next(t, ch); ev.Revision != rev || !ev.IsCreate {
		t.Fatalf("got %+v, want the create at %d", ev, rev)
	}
	other, err := s.Create(ctx, "/registry/services/x", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, storagetest.Timeout)
	defer wcancel()
	if err := c.WaitForRevision(wctx, other); err != nil {
		t.Fatal(err)
	}
	if items, r := c.List(ctx, "/registry/pods/"); len(items) != 2 || r < other {
		t.Fatalf("List = %d items at %d", len(items), r)
	}
}

func TestEmbeddedUnixSocket(t *testing.T) {
	// Socket paths are limited to ~100 bytes: keep it short.
	dir, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	u := url.URL{Scheme: "unix", Path: filepath.Join(dir, "etcd.sock")}
	e, err := etcd.StartEmbedded(filepath.Join(dir, "data"), etcd.WithoutFsync(), etcd.WithClientURL(u))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Store().Create(t.Context(), "/a", []byte("a")); err != nil {
		t.Fatalf("Create over %s: %v", e.Endpoint(), err)
	}
}
