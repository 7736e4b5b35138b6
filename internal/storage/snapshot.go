package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// Snapshot is every key and value of a store at one revision, which
// Restore writes back (package testenv's Snapshot and Reset).
type Snapshot struct {
	// Revision is the revision the keys were read at.
	Revision int64
	values   map[string][]byte
}

// TakeSnapshot reads every key of s.
func TakeSnapshot(ctx context.Context, s Interface) (*Snapshot, error) {
	res, err := s.List(ctx, "/", ListOptions{})
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{Revision: res.Revision, values: make(map[string][]byte, len(res.Items))}
	for _, kv := range res.Items {
		snap.values[kv.Key] = kv.Value
	}
	return snap, nil
}

// maxRestorePasses bounds Restore's passes over the store.
const maxRestorePasses = 20

// Restore makes s hold what snap holds: keys made since are deleted, keys
// changed are written back, keys deleted are made again. These are
// ordinary writes, at new revisions, which watches see. Writers that react
// to them (a controller making again a pod whose ReplicaSet is still
// there) are undone by another pass, until a pass finds nothing to change.
// It reports how many writes it made.
func (snap *Snapshot) Restore(ctx context.Context, s Interface) (int, error) {
	total := 0
	for range maxRestorePasses {
		res, err := s.List(ctx, "/", ListOptions{})
		if err != nil {
			return total, err
		}
		writes := 0
		present := make(map[string]bool, len(res.Items))
		for _, kv := range res.Items {
			present[kv.Key] = true
			want, kept := snap.values[kv.Key]
			switch {
			case !kept:
				_, _, err = s.Delete(ctx, kv.Key, kv.ModRevision)
			case !bytes.Equal(want, kv.Value) || kv.Stale:
				_, err = s.Update(ctx, kv.Key, want, kv.ModRevision)
			default:
				continue
			}
			if err := ignoreRace(err); err != nil {
				return total, fmt.Errorf("restoring %s: %w", kv.Key, err)
			}
			writes++
		}
		for key, value := range snap.values {
			if present[key] {
				continue
			}
			_, err := s.Create(ctx, key, value)
			if err := ignoreRace(err); err != nil {
				return total, fmt.Errorf("restoring %s: %w", key, err)
			}
			writes++
		}
		if writes == 0 {
			return total, nil
		}
		total += writes
	}
	return total, fmt.Errorf("storage: restoring a snapshot: still changing after %d passes", maxRestorePasses)
}

// ignoreRace is err unless it is a lost race with another writer, which the
// next pass settles.
func ignoreRace(err error) error {
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrKeyExists) {
		return nil
	}
	return err
}
