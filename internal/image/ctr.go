package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Namespace is the containerd namespace the CRI plugin uses.
const Namespace = "k8s.io"

// ctr runs `ctr -a socket -n k8s.io args…` and returns its standard output.
func ctr(ctx context.Context, socket string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"-a", socket, "-n", Namespace}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Import loads the image tarball file (docker-archive or OCI layout) into
// the containerd at socket, unpacked for the overlayfs snapshotter.
func Import(ctx context.Context, socket, file string) error {
	_, err := ctr(ctx, socket, "images", "import", "--snapshotter", "overlayfs", file)
	return err
}

// Load saves img as ref to a temporary file and imports it.
func Load(ctx context.Context, socket string, img v1.Image, ref string) error {
	dir, err := os.MkdirTemp("", "plainkube-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "image.tar")
	if err := Save(img, ref, file); err != nil {
		return err
	}
	return Import(ctx, socket, file)
}

// List returns the references of the images in the containerd at socket,
// sorted (including the digest-only references the CRI plugin adds).
func List(ctx context.Context, socket string) ([]string, error) {
	out, err := ctr(ctx, socket, "images", "list", "--quiet")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Remove deletes the images refs from the containerd at socket.
func Remove(ctx context.Context, socket string, refs ...string) error {
	if len(refs) == 0 {
		return nil
	}
	_, err := ctr(ctx, socket, append([]string{"images", "remove"}, refs...)...)
	return err
}

// Normalize is ref as containerd names it: docker.io/library/ added to a
// bare name, :latest to an untagged one ("busybox" →
// "docker.io/library/busybox:latest").
func Normalize(ref string) string {
	name, tag := ref, ""
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		name, tag = ref[:i], ref[i:]
	} else if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i:]
	}
	if tag == "" {
		tag = ":latest"
	}
	first, _, hasSlash := strings.Cut(name, "/")
	switch {
	case !hasSlash:
		name = "docker.io/library/" + name
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		name = "docker.io/" + name
	}
	return name + tag
}

// ErrNotPresent is returned by Mounter.Mount for an image the containerd
// does not have.
var ErrNotPresent = errors.New("image not present")

// Mounter mounts images of the containerd at Socket read-only on host
// directories: the node agent's image volumes.
type Mounter struct{ Socket string }

// Mount mounts the root file system of image ref (Normalize'd) read-only
// on dir, unpacking it first if it never was. containerd keeps the mount's
// snapshot under a lease named dir (ctr's), so Unmount finds it by dir
// alone. A ref the containerd does not have is ErrNotPresent.
func (m Mounter) Mount(ctx context.Context, ref, dir string) error {
	_, err := ctr(ctx, m.Socket, "images", "mount", "--snapshotter", "overlayfs", Normalize(ref), dir)
	if err != nil && strings.Contains(err.Error(), ": not found") {
		return fmt.Errorf("%w: %q", ErrNotPresent, Normalize(ref))
	}
	return err
}

// Unmount undoes Mount: it unmounts dir and removes its snapshot and
// lease (those already gone are no error).
func (m Mounter) Unmount(ctx context.Context, dir string) error {
	_, err := ctr(ctx, m.Socket, "images", "unmount", "--snapshotter", "overlayfs", "--rm", dir)
	return err
}
