// Package procs reads the host's process table: the command lines of the
// running processes, so that what a node left running (a containerd, its
// shims) can be found (plainkube cleanup, the end-to-end tests' checks).
package procs
