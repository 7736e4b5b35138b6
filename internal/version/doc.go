// Package version is plainkube's version, reported at /version and by
// `plainkube version`: the Kubernetes API version it speaks, with a
// plainkube suffix.
package version
