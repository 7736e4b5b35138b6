// Package etcd is the storage.Interface backend over an etcd v3 cluster,
// through go.etcd.io/etcd/client/v3.
//
// Writes are single transactions: Create puts if the key's CreateRevision is
// 0, Update and Delete put or delete if its ModRevision matches and otherwise
// read the key to tell ErrNotFound from ErrConflict. List is one ranged read
// at one revision; Watch is an etcd watch with previous values, whose
// compaction errors become EventError(ErrCompacted). etcd's revision numbers
// are used unchanged.
//
// New wraps a client the caller owns; Dial connects to an external cluster;
// StartEmbedded runs a single-node etcd inside the process (the default for
// plainkube server), listening only on loopback.
package etcd
