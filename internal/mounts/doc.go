// Package mounts reads the host's mount table: what is mounted below a
// folder (a node's pod volumes), so that what a node left can be
// unmounted (plainkube cleanup, the end-to-end tests' teardown).
package mounts
