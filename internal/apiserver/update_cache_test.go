package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/registry/all"
	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/memory"
	"plainkube.dev/plainkube/internal/storage/storagetest"
)

// countingStore counts Gets.
type countingStore struct {
	storage.Interface
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	c.gets.Add(1)
	return c.Interface.Get(ctx, key)
}

// TestUpdatesStartFromTheWatchCache: an update reads nothing from storage
// when the watch cache holds the object, and a stale cached copy never
// makes an answer wrong: the write conflicts, or the answer (a no-op, a 409,
// a failed JSON-patch test, a dry run) is made again on a fresh read.
func TestUpdatesStartFromTheWatchCache(t *testing.T) {
	mem := memory.New(memory.Options{})
	gate := storagetest.NewGated(mem)
	st := &countingStore{Interface: gate}
	s, h := startTestServer(t, Config{Storage: st, Resources: all.Resources(), Logger: discardLogger()})
	ctx := t.Context()
	call := func(method, path, contentType, body string) (int, *corev1.ConfigMap) {
		t.Helper()
		req := httptest.NewRequest(method, path, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var cm corev1.ConfigMap
		if rec.Code < 300 {
			if err := json.Unmarshal(rec.Body.Bytes(), &cm); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
		}
		return rec.Code, &cm
	}
	rs := s.stores[schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}]
	caughtUp := func(rv string) {
		t.Helper()
		rev, _ := strconv.ParseInt(rv, 10, 64)
		deadline := time.Now().Add(10 * time.Second)
		for rs.cache.Revision() < rev {
			if time.Now().After(deadline) {
				t.Fatalf("watch cache at %d, want %d", rs.cache.Revision(), rev)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	const path = "/api/v1/namespaces/default/configmaps/a"
	const ct = "application/json"
	if code, _ := call("POST", "/api/v1/namespaces", ct, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`); code != http.StatusCreated {
		t.Fatalf("namespace: %d", code)
	}
	code, cm := call("POST", "/api/v1/namespaces/default/configmaps", ct, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"1"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	caughtUp(cm.ResourceVersion)

	// A current cached copy: the update reads nothing from storage.
	gets := st.gets.Load()
	code, cm = call("PUT", path, ct, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"`+cm.ResourceVersion+`"},"data":{"k":"2"}}`)
	if code != http.StatusOK || cm.Data["k"] != "2" {
		t.Fatalf("update: %d %v", code, cm.Data)
	}
	if n := st.gets.Load() - gets; n != 0 {
		t.Errorf("an update from a current cached copy read storage %d times", n)
	}
	caughtUp(cm.ResourceVersion)

	// From here the cache falls behind the store.
	gate.Hold()
	held := true
	defer func() {
		if held {
			gate.Release()
		}
	}()
	const key = "/registry/configmaps/default/a"
	// elsewhere writes data k=v as another API server would, straight to
	// storage, and returns the new resourceVersion. It forgets this
	// server's own writes, as if the cache had caught up with them: the
	// next update starts from the cache's stale copy.
	elsewhere := func(v string) string {
		t.Helper()
		kv, err := mem.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := rs.decodeObject(kv.Value, kv.ModRevision)
		if err != nil {
			t.Fatal(err)
		}
		obj.(*corev1.ConfigMap).Data = map[string]string{"k": v}
		value, err := rs.encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		rev, err := mem.Update(ctx, key, value, kv.ModRevision)
		if err != nil {
			t.Fatal(err)
		}
		if rs.cache.Revision() >= rev {
			t.Fatal("the watch cache was not held back")
		}
		rs.written.Delete(key)
		return strconv.FormatInt(rev, 10)
	}

	// The client holds the current resourceVersion, the cache an older one.
	current := elsewhere("3")
	code, cm = call("PUT", path, ct, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"`+current+`"},"data":{"k":"4"}}`)
	if code != http.StatusOK || cm.Data["k"] != "4" {
		t.Fatalf("update with the current resourceVersion over a stale cache: %d %v", code, cm.Data)
	}
	// After its own write this server reads storage, not the stale cache:
	// one read, no conflict.
	gets = st.gets.Load()
	code, cm = call("PATCH", path, "application/merge-patch+json", `{"data":{"k":"4b"}}`)
	if n := st.gets.Load() - gets; code != http.StatusOK || cm.Data["k"] != "4b" || n != 1 {
		t.Fatalf("patch after this server's own write: %d %v, %d reads of storage, want 1", code, cm.Data, n)
	}
	// Not a change of what is stored (but of the cached copy): a no-op.
	current = elsewhere("5")
	code, cm = call("PATCH", path, "application/merge-patch+json", `{"data":{"k":"5"}}`)
	if code != http.StatusOK || cm.ResourceVersion != current {
		t.Fatalf("no-op patch over a stale cache: %d, resourceVersion %s, want %s unchanged", code, cm.ResourceVersion, current)
	}
	// A JSON-patch test of the stored value passes.
	elsewhere("6")
	code, cm = call("PATCH", path, "application/json-patch+json", `[{"op":"test","path":"/data/k","value":"6"},{"op":"replace","path":"/data/k","value":"7"}]`)
	if code != http.StatusOK || cm.Data["k"] != "7" {
		t.Fatalf("JSON-patch test over a stale cache: %d %v", code, cm.Data)
	}
	// A dry run answers from what is stored.
	current = elsewhere("8")
	code, cm = call("PATCH", path+"?dryRun=All", "application/merge-patch+json", `{"data":{"other":"x"}}`)
	if code != http.StatusOK || cm.Data["k"] != "8" || cm.ResourceVersion != current {
		t.Fatalf("dry run over a stale cache: %d %v rv %s want %s", code, cm.Data, cm.ResourceVersion, current)
	}
	// A stale resourceVersion is still a conflict.
	old := current
	current = elsewhere("9")
	if code, _ = call("PUT", path, ct, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"`+old+`"},"data":{"k":"10"}}`); code != http.StatusConflict {
		t.Fatalf("update with a stale resourceVersion: %d, want 409", code)
	}
	gate.Release()
	held = false
	caughtUp(current)
	kv, err := mem.Get(ctx, key)
	if err != nil || !bytes.Contains(kv.Value, []byte(`"k":"9"`)) || strconv.FormatInt(kv.ModRevision, 10) != current {
		t.Fatalf("stored: %s at %d, %v; want k=9 at %s", kv.Value, kv.ModRevision, err, current)
	}
}
