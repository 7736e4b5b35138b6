package memory

import (
	"context"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/internal/keyspace"
)

// watchBatch caps the events a watcher copies out of the history per lock.
const watchBatch = 256

// Watch implements storage.Interface. Each watch runs its own goroutine that
// follows the shared history from fromRevision.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan storage.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil, ErrClosed
	}
	if fromRevision == 0 {
		fromRevision = s.rev
	}
	out := make(chan storage.Event, 16)
	s.wg.Add(1)
	go s.follow(ctx, prefix, fromRevision, out)
	return out, nil
}

// follow sends the changes under prefix after pos to out until ctx ends, the
// store closes, or the history it needs is gone.
func (s *Store) follow(ctx context.Context, prefix string, pos int64, out chan<- storage.Event) {
	defer s.wg.Done()
	defer close(out)
	batch := make([]storage.Event, 0, watchBatch)
	for {
		batch = batch[:0]
		s.mu.RLock()
		compacted := pos < s.floor
		if !compacted {
			for pos < s.rev && len(batch) < cap(batch) {
				pos++
				if c := s.ring[pos%int64(len(s.ring))]; keyspace.Match(prefix, c.kv.Key) {
					batch = append(batch, c.event())
				}
			}
		}
		caughtUp := pos >= s.rev
		wake, progress := s.wake, s.progress
		s.mu.RUnlock()

		if compacted {
			batch = append(batch, storage.Event{Type: storage.EventError, Err: storage.ErrCompacted})
		}
		for _, ev := range batch {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			case <-s.closed:
				return
			}
		}
		if compacted {
			return
		}
		for caughtUp {
			select {
			case <-wake:
				caughtUp = false
			case <-progress:
				// Everything up to pos was sent: say so.
				select {
				case out <- storage.Event{Type: storage.EventProgress, Revision: pos}:
				case <-ctx.Done():
					return
				case <-s.closed:
					return
				}
				s.mu.RLock()
				progress = s.progress
				caughtUp = pos >= s.rev
				s.mu.RUnlock()
			case <-ctx.Done():
				return
			case <-s.closed:
				return
			}
		}
	}
}
