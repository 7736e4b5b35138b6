package encrypted

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apiserver/pkg/storage/value"

	"plainkube.dev/plainkube/internal/storage"
)

// Prefix gives the values of the keys under Prefix their transformer.
type Prefix struct {
	Prefix      string
	Transformer value.Transformer
}

// Store encrypts values under its prefixes; the rest passes through.
type Store struct {
	storage.Interface
	prefixes []Prefix // longest first
}

var _ storage.Interface = (*Store)(nil)

// New wraps st; of several prefixes of one key, the longest applies. The
// store returned reports watch progress if st does.
func New(st storage.Interface, prefixes []Prefix) storage.Interface {
	ps := append([]Prefix(nil), prefixes...)
	sort.SliceStable(ps, func(i, j int) bool { return len(ps[i].Prefix) > len(ps[j].Prefix) })
	s := &Store{Interface: st, prefixes: ps}
	if p, ok := st.(storage.ProgressRequester); ok {
		return progressStore{s, p}
	}
	return s
}

// progressStore is a Store over a store that reports watch progress.
type progressStore struct {
	*Store
	storage.ProgressRequester
}

func (s *Store) transformer(key string) value.Transformer {
	for _, p := range s.prefixes {
		if strings.HasPrefix(key, p.Prefix) {
			return p.Transformer
		}
	}
	return nil
}

// mayTransform reports whether some key under prefix has a transformer.
func (s *Store) mayTransform(prefix string) bool {
	for _, p := range s.prefixes {
		if strings.HasPrefix(p.Prefix, prefix) || strings.HasPrefix(prefix, p.Prefix) {
			return true
		}
	}
	return false
}

func (s *Store) encrypt(ctx context.Context, key string, data []byte) ([]byte, error) {
	t := s.transformer(key)
	if t == nil {
		return data, nil
	}
	out, err := t.TransformToStorage(ctx, data, value.DefaultContext(key))
	if err != nil {
		return nil, fmt.Errorf("encrypting %s: %w", key, err)
	}
	return out, nil
}

// decrypt returns data as written, and whether it was read with a key
// (or provider) other than the one writes use now.
func (s *Store) decrypt(ctx context.Context, key string, data []byte) ([]byte, bool, error) {
	t := s.transformer(key)
	if t == nil || len(data) == 0 {
		return data, false, nil
	}
	out, stale, err := t.TransformFromStorage(ctx, data, value.DefaultContext(key))
	if err != nil {
		return nil, false, fmt.Errorf("decrypting %s: %w", key, err)
	}
	return out, stale, nil
}

func (s *Store) decryptKV(ctx context.Context, kv *storage.KeyValue) error {
	v, stale, err := s.decrypt(ctx, kv.Key, kv.Value)
	if err != nil {
		return err
	}
	kv.Value, kv.Stale = v, stale
	return nil
}

func (s *Store) Create(ctx context.Context, key string, data []byte) (int64, error) {
	enc, err := s.encrypt(ctx, key, data)
	if err != nil {
		return 0, err
	}
	return s.Interface.Create(ctx, key, enc)
}

func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	kv, err := s.Interface.Get(ctx, key)
	if err != nil {
		return kv, err
	}
	return kv, s.decryptKV(ctx, &kv)
}

func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	res, err := s.Interface.List(ctx, prefix, opts)
	if err != nil {
		return res, err
	}
	for i := range res.Items {
		if err := s.decryptKV(ctx, &res.Items[i]); err != nil {
			return storage.ListResult{}, err
		}
	}
	return res, nil
}

func (s *Store) Update(ctx context.Context, key string, data []byte, expectedRevision int64) (int64, error) {
	enc, err := s.encrypt(ctx, key, data)
	if err != nil {
		return 0, err
	}
	return s.Interface.Update(ctx, key, enc, expectedRevision)
}

func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	kv, rev, err := s.Interface.Delete(ctx, key, expectedRevision)
	if err != nil {
		return kv, rev, err
	}
	return kv, rev, s.decryptKV(ctx, &kv)
}

// Watch decrypts each event's values; a value it cannot decrypt ends the
// watch with that error.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan storage.Event, error) {
	in, err := s.Interface.Watch(ctx, prefix, fromRevision)
	if err != nil || !s.mayTransform(prefix) {
		return in, err // nothing under prefix is encrypted: no second hop per event
	}
	out := make(chan storage.Event, cap(in))
	go func() {
		defer close(out)
		for ev := range in {
			var err error
			if ev.Type == storage.EventPut || ev.Type == storage.EventDelete {
				if ev.Value, ev.Stale, err = s.decrypt(ctx, ev.Key, ev.Value); err == nil {
					ev.PrevValue, _, err = s.decrypt(ctx, ev.Key, ev.PrevValue)
				}
			}
			if err != nil {
				ev = storage.Event{Type: storage.EventError, Err: err}
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				for range in { // let the inner watch end
				}
				return
			}
			if ev.Type == storage.EventError {
				for range in {
				}
				return
			}
		}
	}()
	return out, nil
}
