// Package pause builds plainkube's sandbox ("pause") image from source.
//
// The program is cmd/pause, embedded here; Binary compiles it with the Go
// toolchain found on PATH (CGO_ENABLED=0, so it is static) into a cache
// directory, once, and Image wraps it in a single-layer image whose
// entrypoint is /pause. Ensure imports that image into a containerd unless
// it is already there, so a node agent calls it once at start.
package pause
