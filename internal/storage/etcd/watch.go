package etcd

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/internal/keyspace"
)

var errWatchClosed = errors.New("etcd: watch closed by the client")

// Watch implements storage.Interface. fromRevision 0 is resolved to the
// current revision first, so that every write after Watch returns is seen.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan storage.Event, error) {
	if fromRevision == 0 {
		rev, err := s.CurrentRevision(ctx)
		if err != nil {
			return nil, err
		}
		fromRevision = rev
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	stop := context.AfterFunc(s.ctx, cancel) // Close ends the watch too
	opts := []clientv3.OpOption{clientv3.WithRev(fromRevision + 1), clientv3.WithPrevKV()}
	key := prefix
	if keyspace.IsPrefix(prefix) {
		end := keyspace.End(prefix)
		if key == "" {
			key = "\x00"
		}
		if end == "" {
			end = "\x00"
		}
		opts = append(opts, clientv3.WithRange(end))
	}
	wch := s.client.Watch(wctx, key, opts...)
	out := make(chan storage.Event, 100)
	go func() {
		defer close(out)
		defer stop()
		defer cancel()
		send := func(ev storage.Event) bool {
			select {
			case out <- ev:
				return true
			case <-wctx.Done():
				return false
			}
		}
		for resp := range wch {
			if err := resp.Err(); err != nil {
				if resp.CompactRevision != 0 {
					err = fmt.Errorf("%w (compacted at %d)", storage.ErrCompacted, resp.CompactRevision)
				} else {
					err = convert(err)
				}
				if wctx.Err() == nil {
					send(storage.Event{Type: storage.EventError, Err: err})
				}
				return
			}
			if resp.IsProgressNotify() {
				if !send(storage.Event{Type: storage.EventProgress, Revision: resp.Header.Revision}) {
					return
				}
				continue
			}
			for _, e := range resp.Events {
				if !send(event(e)) {
					return
				}
			}
		}
		if wctx.Err() == nil { // the client went away under a live watch
			send(storage.Event{Type: storage.EventError, Err: errWatchClosed})
		}
	}()
	return out, nil
}

func event(e *clientv3.Event) storage.Event {
	ev := storage.Event{Key: string(e.Kv.Key), Revision: e.Kv.ModRevision}
	if e.PrevKv != nil {
		ev.PrevValue = e.PrevKv.Value
	}
	switch e.Type {
	case clientv3.EventTypeDelete:
		ev.Type = storage.EventDelete
	default:
		ev.Type = storage.EventPut
		ev.Value = e.Kv.Value
		ev.IsCreate = e.IsCreate()
	}
	return ev
}

// RequestProgress implements storage.ProgressRequester with etcd's progress
// notify, on the watch stream every Watch of this store shares.
func (s *Store) RequestProgress(ctx context.Context) error {
	return convert(s.client.RequestProgress(clientv3.WithRequireLeader(ctx)))
}
