// Package encrypted is a storage.Interface that keeps the values under
// chosen key prefixes encrypted at rest: it wraps another store, encrypts
// what it writes there and decrypts what it reads, with upstream's value
// transformers (aescbc, aesgcm, secretbox, identity) as an
// EncryptionConfiguration makes them. Reads with a key other than the one
// writes use are marked Stale, so that an update rewrites the value even
// when nothing else changed (key rotation by replacing every object).
package encrypted
