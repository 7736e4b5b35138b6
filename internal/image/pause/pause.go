package pause

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"plainkube.dev/plainkube/internal/image"
)

// Ref is the pause image's reference.
const Ref = "plainkube.dev/pause:3.10"

//go:embed cmd/pause/main.go
var source []byte

// goTool is the go command: on PATH, else in this binary's GOROOT.
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p, nil
	}
	return "", fmt.Errorf("building the pause image needs the Go toolchain (go) on PATH")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Binary compiles the pause program into cacheDir (once per source
// version) and returns the binary's path.
func Binary(ctx context.Context, cacheDir string) (string, error) {
	sum := sha256.Sum256(source)
	out := filepath.Join(cacheDir, "pause-"+hex.EncodeToString(sum[:8]))
	if fileExists(out) {
		return out, nil
	}
	gobin, err := goTool()
	if err != nil {
		return "", err
	}
	src, err := os.MkdirTemp("", "plainkube-pause-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	if err := os.WriteFile(filepath.Join(src, "main.go"), source, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module pause\n\ngo 1.22\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	tmp := out + ".tmp"
	cmd := exec.CommandContext(ctx, gobin, "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(slices.Clone(os.Environ()), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the pause binary: %w: %s", err, b)
	}
	return out, os.Rename(tmp, out)
}

// Image builds the pause image (compiling the binary into cacheDir).
func Image(ctx context.Context, cacheDir string) (v1.Image, error) {
	bin, err := Binary(ctx, cacheDir)
	if err != nil {
		return nil, err
	}
	return image.Build([]image.File{{Path: "/pause", Source: bin, Mode: 0o755}}, image.Config{Entrypoint: []string{"/pause"}})
}

// Ensure imports the pause image into the containerd at socket as Ref and
// as each of alsoAs (for a containerd configured with another sandbox
// image), under each name not already there.
func Ensure(ctx context.Context, socket, cacheDir string, alsoAs ...string) error {
	refs, err := image.List(ctx, socket)
	if err != nil {
		return err
	}
	var img v1.Image
	for _, ref := range append([]string{Ref}, alsoAs...) {
		if ref == "" || slices.Contains(refs, ref) || slices.Contains(refs, image.Normalize(ref)) {
			continue
		}
		if img == nil {
			if img, err = Image(ctx, cacheDir); err != nil {
				return err
			}
		}
		if err := image.Load(ctx, socket, img, ref); err != nil {
			return err
		}
		refs = append(refs, ref)
	}
	return nil
}
