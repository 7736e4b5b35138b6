package image_test

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/image"
	"plainkube.dev/plainkube/internal/image/pause"
	"plainkube.dev/plainkube/internal/kubelet/containerd"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                  "docker.io/library/busybox:latest",
		"busybox:1.36":             "docker.io/library/busybox:1.36",
		"me/app":                   "docker.io/me/app:latest",
		"plainkube.dev/pause:3.10": "plainkube.dev/pause:3.10",
		"localhost:5000/x":         "localhost:5000/x:latest",
		"reg.io/a/b@sha256:abc":    "reg.io/a/b@sha256:abc",
	} {
		if got := image.Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBuildLayer(t *testing.T) {
	dir := t.TempDir()
	bin := dir + "/tool"
	if err := os.WriteFile(bin, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := image.FromBinary(bin, "/bin/tool", "/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || !slices.Equal(cf.Config.Entrypoint, []string{"/bin/tool"}) {
		t.Errorf("config = %+v", cf)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
	}
	if h := got["bin/tool"]; h == nil || h.Mode != 0o755 || h.Size != 8 {
		t.Errorf("bin/tool = %+v", h)
	}
	if h := got["bin/sh"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/bin/tool" {
		t.Errorf("bin/sh = %+v", h)
	}
	if h := got["bin/"]; h == nil || h.Typeflag != tar.TypeDir {
		t.Errorf("bin/ = %+v", h)
	}
	if h := got["tmp/"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("tmp/ = %+v", h)
	}
}

func TestImportListRemove(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run containerd")
	}
	if err := containerd.CheckInstalled(""); err != nil {
		t.Skip(err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	p, err := containerd.Start(ctx, containerd.Options{DataDir: dir + "/containerd"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()

	if err := pause.Ensure(ctx, p.Socket(), dir+"/cache"); err != nil {
		t.Fatal(err)
	}
	refs, err := image.List(ctx, p.Socket())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(refs, pause.Ref) {
		t.Fatalf("images = %v, want %s", refs, pause.Ref)
	}
	if err := pause.Ensure(ctx, p.Socket(), dir+"/cache"); err != nil { // a no-op now
		t.Fatal(err)
	}

	img, err := image.Build([]image.File{{Path: "/hello", Data: []byte("hi\n")}}, image.Config{Cmd: []string{"/hello"}, User: "1234"})
	if err != nil {
		t.Fatal(err)
	}
	if err := image.Load(ctx, p.Socket(), img, "example.com/hello:1"); err != nil {
		t.Fatal(err)
	}
	st, err := p.Images.ImageStatus(ctx, criImage("example.com/hello:1"), false)
	if err != nil || st.Image == nil {
		t.Fatalf("CRI does not see the imported image: %v %v", st, err)
	}
	if st.Image.Uid.GetValue() != 1234 {
		t.Errorf("CRI reports the image's user as %v, want uid 1234 (its config's User)", st.Image.Uid)
	}
	if err := image.Remove(ctx, p.Socket(), "example.com/hello:1"); err != nil {
		t.Fatal(err)
	}
	refs, _ = image.List(ctx, p.Socket())
	if slices.Contains(refs, "example.com/hello:1") {
		t.Errorf("still listed after Remove: %v", refs)
	}
}
