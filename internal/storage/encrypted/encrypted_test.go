package encrypted_test

import (
	"context"
	"crypto/aes"
	"strings"
	"testing"

	aestransformer "k8s.io/apiserver/pkg/storage/value/encrypt/aes"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/encrypted"
	"plainkube.dev/plainkube/internal/storage/memory"
	"plainkube.dev/plainkube/internal/storage/storagetest"
)

// TestSuite: the store passes the shared storage suite with every key
// encrypted, and stores ciphertext.
func TestSuite(t *testing.T) {
	block, err := aes.NewCipher([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	cbc := aestransformer.NewCBCTransformer(block)
	storagetest.RunSuite(t, func(t *testing.T) storage.Interface {
		m := memory.New(memory.Options{})
		t.Cleanup(func() { m.Close() })
		return encrypted.New(m, []encrypted.Prefix{{Prefix: "/", Transformer: cbc}})
	})

	m := memory.New(memory.Options{})
	defer m.Close()
	s := encrypted.New(m, []encrypted.Prefix{{Prefix: "/secret/", Transformer: cbc}})
	ctx := context.Background()
	for _, key := range []string{"/secret/a", "/plain/a"} {
		if _, err := s.Create(ctx, key, []byte("visible value")); err != nil {
			t.Fatal(err)
		}
	}
	if kv, _ := m.Get(ctx, "/secret/a"); strings.Contains(string(kv.Value), "visible") {
		t.Errorf("stored in the clear: %q", kv.Value)
	}
	if kv, _ := m.Get(ctx, "/plain/a"); string(kv.Value) != "visible value" {
		t.Errorf("a key of no prefix changed: %q", kv.Value)
	}
	if kv, err := s.Get(ctx, "/secret/a"); err != nil || string(kv.Value) != "visible value" || kv.Stale {
		t.Errorf("read back: %q, stale %v, %v", kv.Value, kv.Stale, err)
	}
}
