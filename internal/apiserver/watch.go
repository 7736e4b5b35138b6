package apiserver

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/cache"
)

// bookmarkInterval is how often a watch that allows bookmarks gets one.
const bookmarkInterval = time.Minute

// initialEventsEndAnnotation marks the bookmark that ends the initial events
// of a watch with sendInitialEvents=true.
const initialEventsEndAnnotation = "k8s.io/initial-events-end"

func (s *Server) handleWatch(rq *request) error {
	lo, err := s.parseListOptions(rq)
	if err != nil {
		return err
	}
	rs := rq.rs
	if rq.info.Name != "" {
		lo.fields = fields.AndSelectors(lo.fields, fields.OneTermEqualSelector("metadata.name", rq.info.Name))
	}
	timeout := lo.timeout
	if timeout == 0 {
		timeout = 30*time.Minute + time.Duration(rand.Int64N(int64(30*time.Minute)))
	}
	ctx, cancel := context.WithTimeout(rq.r.Context(), timeout)
	defer cancel()
	prefix := rs.keyPrefix(rq.info.Namespace)

	// Without a resourceVersion (or with "0") a watch starts with the current
	// state as ADDED events; with sendInitialEvents the client says so itself.
	initial := lo.rv == "" || lo.rv == "0"
	if lo.initialEvents != nil {
		initial = *lo.initialEvents
	}
	var (
		items []storage.KeyValue
		rev   int64
		ch    <-chan storage.Event
	)
	if initial {
		if err := s.waitForCache(ctx, rs, lo.rv); err != nil {
			return err
		}
		items, rev, ch = rs.cache.ListAndWatch(ctx, prefix)
	} else {
		from, _ := strconv.ParseInt(lo.rv, 10, 64)
		if lo.rv == "" || lo.rv == "0" {
			from = 0
		}
		if lo.rv != "" && lo.rv != "0" {
			if err := s.waitForCache(ctx, rs, lo.rv); err != nil {
				return err
			}
		}
		ch, err = rs.cache.Watch(ctx, prefix, from)
		if err != nil && !errors.Is(err, storage.ErrCompacted) {
			return storageError(err, rs.gr, "")
		}
		if err != nil {
			ch = errorEvents(err)
		}
		rev = from
	}

	ws, err := s.newWatchStream(rq)
	if err != nil {
		return err
	}
	for _, kv := range items {
		obj, err := rs.decode(kv.Key, kv.Value, kv.ModRevision)
		if err != nil || !rs.matches(obj, lo) {
			continue
		}
		if err := ws.send(watch.Added, obj); err != nil {
			return nil
		}
	}
	if lo.initialEvents != nil && *lo.initialEvents && lo.bookmarks {
		if err := ws.send(watch.Bookmark, s.bookmark(rs, rev, true)); err != nil {
			return nil
		}
	}
	ws.flush()
	if started, ok := rq.r.Context().Value(watchStartedKey{}).(func()); ok {
		started()
	}

	ticker := time.NewTicker(bookmarkInterval)
	defer ticker.Stop()
	lastRev := rev
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			if lo.bookmarks && lastRev > 0 {
				if ws.send(watch.Bookmark, s.bookmark(rs, lastRev, false)) != nil {
					return nil
				}
				ws.flush()
			}
		case ev, ok := <-ch:
			if !ok {
				return nil
			}
			if ev.Type == storage.EventError && errors.Is(ev.Err, cache.ErrStopped) {
				// The resource stopped being served (its CRD was deleted or
				// changed): the stream ends, as upstream closes it.
				return nil
			}
			if ev.Type == storage.EventError {
				ws.send(watch.Error, toStatus(storageError(ev.Err, rs.gr, "")))
				ws.flush()
				return nil
			}
			lastRev = ev.Revision
			t, obj, err := s.watchEvent(rs, ev, lo)
			if err != nil {
				// An event that cannot be decoded (a custom resource whose
				// conversion webhook failed) ends the watch with the error,
				// as upstream's: the client watches again from the last
				// event it saw rather than miss this one.
				ws.send(watch.Error, toStatus(apierrors.NewInternalError(err)))
				ws.flush()
				return nil
			}
			if obj == nil {
				continue
			}
			if ws.send(t, obj) != nil {
				return nil
			}
			// Flush when no further event is ready, batching bursts.
			if len(ch) == 0 {
				ws.flush()
			}
		}
	}
}

// watchEvent turns a storage event into the event a client with lo's
// selectors sees: an object that starts or stops matching is ADDED or DELETED.
func (s *Server) watchEvent(rs *resourceStore, ev storage.Event, lo *listOptions) (watch.EventType, runtime.Object, error) {
	selective := !lo.labels.Empty() || !lo.fields.Empty()
	if ev.Type == storage.EventDelete {
		if len(ev.PrevValue) == 0 {
			return "", nil, nil
		}
		// Every watcher sees the same deleted object: decode it once.
		prev, err := rs.decode(ev.Key+deletedKeySuffix, ev.PrevValue, ev.Revision)
		if err != nil {
			return "", nil, err
		}
		if !rs.matches(prev, lo) {
			return "", nil, nil
		}
		return watch.Deleted, prev, nil
	}
	if len(ev.Value) == 0 {
		return "", nil, nil
	}
	cur, err := rs.decode(ev.Key, ev.Value, ev.Revision)
	if err != nil {
		return "", nil, err
	}
	// Without selectors the previous state does not matter.
	if ev.IsCreate || len(ev.PrevValue) == 0 || !selective {
		if !rs.matches(cur, lo) {
			return "", nil, nil
		}
		if ev.IsCreate || len(ev.PrevValue) == 0 {
			return watch.Added, cur, nil
		}
		return watch.Modified, cur, nil
	}
	prev, err := rs.decodeObject(ev.PrevValue, ev.Revision)
	if err != nil {
		return "", nil, err
	}
	now, before := rs.matches(cur, lo), rs.matches(prev, lo)
	switch {
	case now && before:
		return watch.Modified, cur, nil
	case now:
		return watch.Added, cur, nil
	case before:
		return watch.Deleted, cur, nil
	}
	return "", nil, nil
}

// deletedKeySuffix keys the decoded last state of a deleted object apart
// from the live object of the same name; sweepDecoded drops it later.
const deletedKeySuffix = "\x00deleted"

func (s *Server) bookmark(rs *resourceStore, rev int64, initialEnd bool) runtime.Object {
	obj := rs.newObject()
	obj.GetObjectKind().SetGroupVersionKind(rs.res.Kind)
	m := metaOf(obj)
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{initialEventsEndAnnotation: "true"})
	}
	return obj
}

func errorEvents(err error) <-chan storage.Event {
	ch := make(chan storage.Event, 1)
	ch <- storage.Event{Type: storage.EventError, Err: err}
	close(ch)
	return ch
}

// watchStream writes framed watch events in the negotiated media type.
type watchStream struct {
	s         *Server
	rq        *request
	enc       streaming.Encoder
	flusher   http.Flusher
	buf       bytes.Buffer
	tableSent bool
}

func (s *Server) newWatchStream(rq *request) (*watchStream, error) {
	info := rq.out.info
	if info.StreamSerializer == nil {
		return nil, apierrors.NewBadRequest("no stream serializer for " + rq.out.mediaType)
	}
	w := rq.w
	w.Header().Set("Content-Type", rq.out.mediaType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	ws := &watchStream{s: s, rq: rq, flusher: flusher}
	ws.enc = streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(w), info.StreamSerializer.Serializer)
	ws.flush()
	return ws, nil
}

func (ws *watchStream) send(t watch.EventType, obj runtime.Object) error {
	if t != watch.Error {
		switch ws.rq.out.kind {
		case outputTable:
			table, err := ws.s.toTable(ws.rq, obj, !ws.tableSent)
			if err != nil {
				return err
			}
			ws.tableSent = true
			obj = table
		case outputPartialMetadata:
			obj = toPartialMetadata(obj)
		}
	}
	ws.buf.Reset()
	if err := ws.rq.out.info.Serializer.Encode(obj, &ws.buf); err != nil {
		return err
	}
	if err := ws.enc.Encode(&metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: bytes.TrimSuffix(ws.buf.Bytes(), []byte("\n"))}}); err != nil {
		return err
	}
	if ws.rq.rs != nil {
		ws.s.metrics.countWatchEvent(ws.rq.rs.gvr)
	}
	return nil
}

func (ws *watchStream) flush() {
	if ws.flusher != nil {
		ws.flusher.Flush()
	}
}
