// Package keyspace holds the key arithmetic shared by the storage backends and
// the watch cache: which keys a List or Watch prefix selects, and a sorted set
// of keys.
//
// A prefix that ends in '/' (or is empty) selects every key that starts with
// it, so "/a/" selects "/a/x" and "/a/x/y" but never "/ab/x". Any other
// prefix is a full key and selects only itself. The range a prefix selects is
// the half-open interval [Start(prefix), End(prefix)); End is "" when the range
// is unbounded.
package keyspace
