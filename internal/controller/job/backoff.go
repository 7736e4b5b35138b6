package job

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Pod failure backoff: after n consecutive pod failures (failures since
// the last success) a replacement pod waits DefaultPodFailureBackoff ×
// 2^(n-1), at most DefaultMaxPodFailureBackoff, from the last failure.
const (
	DefaultPodFailureBackoff    = 10 * time.Second
	DefaultMaxPodFailureBackoff = 6 * time.Minute
)

// backoffRecord is a job's consecutive pod failures, as upstream keeps
// them in memory.
type backoffRecord struct {
	failuresAfterLastSuccess int32
	lastFailureTime          *time.Time
}

// nextBackoff is rec after the newly finished pods: a success (the last
// one to finish) resets the count to the failures after it.
func nextBackoff(rec backoffRecord, newSucceeded, newFailed []*corev1.Pod) backoffRecord {
	succeeded := append([]*corev1.Pod(nil), newSucceeded...)
	failed := append([]*corev1.Pod(nil), newFailed...)
	sortByFinishedTime(succeeded)
	sortByFinishedTime(failed)
	if len(succeeded) == 0 {
		if len(failed) == 0 {
			return rec
		}
		t := finishedTime(failed[len(failed)-1])
		return backoffRecord{failuresAfterLastSuccess: rec.failuresAfterLastSuccess + int32(len(failed)), lastFailureTime: &t}
	}
	out := backoffRecord{}
	lastSuccess := finishedTime(succeeded[len(succeeded)-1])
	for i := len(failed) - 1; i >= 0; i-- {
		t := finishedTime(failed[i])
		if !t.After(lastSuccess) {
			break
		}
		if out.lastFailureTime == nil {
			out.lastFailureTime = &t
		}
		out.failuresAfterLastSuccess++
	}
	return out
}

// remaining is how long a replacement pod must still wait at now.
func (rec backoffRecord) remaining(now time.Time, base, maxDelay time.Duration) time.Duration {
	if rec.failuresAfterLastSuccess == 0 || rec.lastFailureTime == nil {
		return 0
	}
	d := backoffDelay(rec.failuresAfterLastSuccess, base, maxDelay)
	elapsed := now.Sub(*rec.lastFailureTime)
	if d < elapsed {
		return 0
	}
	return d - elapsed
}

// backoffDelay is base doubled for every failure after the first, capped
// at maxDelay.
func backoffDelay(failures int32, base, maxDelay time.Duration) time.Duration {
	d := base
	for i := int32(1); i < failures; i++ {
		d *= 2
		if d >= maxDelay {
			return maxDelay
		}
	}
	return min(d, maxDelay)
}

// backoffStore holds every job's record, by key.
type backoffStore struct {
	mu sync.Mutex
	m  map[string]backoffRecord
}

func newBackoffStore() *backoffStore { return &backoffStore{m: map[string]backoffRecord{}} }

func (s *backoffStore) get(key string) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

func (s *backoffStore) set(key string, rec backoffRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = rec
}

func (s *backoffStore) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}
