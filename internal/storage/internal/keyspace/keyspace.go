package keyspace

import (
	"sort"
	"strings"
)

// IsPrefix reports whether p selects a subtree rather than one key.
func IsPrefix(p string) bool { return p == "" || strings.HasSuffix(p, "/") }

// Match reports whether prefix selects key.
func Match(prefix, key string) bool {
	if IsPrefix(prefix) {
		return strings.HasPrefix(key, prefix)
	}
	return key == prefix
}

// Start is the first key of the range prefix selects.
func Start(prefix string) string { return prefix }

// End is the first key after the range prefix selects ("" for no bound).
func End(prefix string) string {
	if !IsPrefix(prefix) {
		return prefix + "\x00"
	}
	// Increment the last byte that is not 0xff; drop the 0xff tail.
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// Before reports whether key sorts before end, where end "" is unbounded.
func Before(key, end string) bool { return end == "" || key < end }

// Sorted is a set of keys kept in sorted order. The zero value is empty and
// ready to use. It is not safe for concurrent use.
type Sorted struct {
	keys []string
}

// Len returns the number of keys.
func (s *Sorted) Len() int { return len(s.keys) }

// Insert adds key; it is a no-op if key is present.
func (s *Sorted) Insert(key string) {
	i := sort.SearchStrings(s.keys, key)
	if i < len(s.keys) && s.keys[i] == key {
		return
	}
	if i == len(s.keys) {
		s.keys = append(s.keys, key)
		return
	}
	s.keys = append(s.keys, "")
	copy(s.keys[i+1:], s.keys[i:])
	s.keys[i] = key
}

// Delete removes key; it is a no-op if key is absent.
func (s *Sorted) Delete(key string) {
	i := sort.SearchStrings(s.keys, key)
	if i == len(s.keys) || s.keys[i] != key {
		return
	}
	copy(s.keys[i:], s.keys[i+1:])
	s.keys[len(s.keys)-1] = ""
	s.keys = s.keys[:len(s.keys)-1]
}

// Range returns the keys in [start, end) in order (end "" is unbounded). The
// result aliases the set's storage: it is valid only until the next Insert
// or Delete and must not be modified.
func (s *Sorted) Range(start, end string) []string {
	i := sort.SearchStrings(s.keys, start)
	j := len(s.keys)
	if end != "" {
		j = i + sort.SearchStrings(s.keys[i:], end)
	}
	return s.keys[i:j:j]
}
