// Package image builds container images without Docker and moves them in
// and out of a containerd.
//
// Build makes a single-layer OCI image (github.com/google/go-containerregistry)
// from a list of files — FromBinary for one static binary and its entrypoint,
// FromDir for a folder — with an image config (entrypoint, cmd, env,
// working directory, linux/GOARCH). Save writes it as a docker-archive
// tarball; Import loads such a tarball into containerd's "k8s.io"
// namespace, where the CRI plugin sees it, and List and Remove manage what
// is there. Import, List and Remove run Debian's `ctr` against the
// containerd socket they are given (the containerd Go client would pull in
// a second copy of much of containerd).
//
// There is no registry and nothing is ever pulled: every image a node runs
// is one imported this way. The sandbox (pause) image is built by the
// subpackage pause.
package image
