package memory_test

import (
	"fmt"
	"testing"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/memory"
	"plainkube.dev/plainkube/internal/storage/storagetest"
)

func TestSuite(t *testing.T) {
	storagetest.RunSuite(t, func(t *testing.T) storage.Interface {
		s := memory.New(memory.Options{})
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func BenchmarkMemoryCreate(b *testing.B) {
	s := memory.New(memory.Options{})
	defer s.Close()
	ctx := b.Context()
	val := make([]byte, 1024)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Create(ctx, fmt.Sprintf("/registry/pods/default/pod-%09d", i), val); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
