// Package upstreamsrc finds upstream Kubernetes' published source in the Go
// module cache, for the tests that compare plainkube with it (discovery,
// OpenAPI, tables): they read upstream's documents and code as data and
// never link it.
package upstreamsrc
