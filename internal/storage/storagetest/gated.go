package storagetest

import (
	"context"
	"sync"

	"plainkube.dev/plainkube/internal/storage"
)

// Gated passes its store's watch events on only while its gate is open (it
// starts open), so that a test can make a watcher, such as a watch cache,
// fall behind the store on purpose.
type Gated struct {
	storage.Interface
	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
}

// NewGated wraps s with an open gate.
func NewGated(s storage.Interface) *Gated {
	g := &Gated{Interface: s, open: make(chan struct{})}
	close(g.open)
	return g
}

// Hold holds back the events not yet passed on. It must not be called
// while the gate is held.
func (g *Gated) Hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = make(chan struct{})
}

// Release lets the held events go. It must follow a Hold.
func (g *Gated) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.open)
}

// Watch is the store's watch, passed on through the gate.
func (g *Gated) Watch(ctx context.Context, prefix string, from int64) (<-chan storage.Event, error) {
	in, err := g.Interface.Watch(ctx, prefix, from)
	if err != nil {
		return nil, err
	}
	out := make(chan storage.Event)
	go func() {
		defer close(out)
		for ev := range in {
			g.mu.Lock()
			open := g.open
			g.mu.Unlock()
			select {
			case <-open:
			case <-ctx.Done():
				return
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
