package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// File is one entry of an image's layer. Exactly one of Source, Data and
// Link is used (Link makes a symbolic link); a Path ending in "/" with none
// of them is a directory.
type File struct {
	Path   string // in the image, absolute or relative to /
	Source string // a file on the host to copy
	Data   []byte // contents
	Link   string // symbolic link target
	Mode   fs.FileMode
}

// Config is the image configuration a container starts from.
type Config struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	User       string // a name or uid[:gid]; "" root
}

// epoch is the time stamped on every layer entry, so that a build is
// reproducible.
var epoch = time.Unix(0, 0).UTC()

// Build makes a single-layer linux image of files with cfg.
func Build(files []File, cfg Config) (v1.Image, error) {
	layerTar, err := layerTar(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	env := cfg.Env
	if len(env) == 0 {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	cf.Config = v1.Config{Entrypoint: cfg.Entrypoint, Cmd: cfg.Cmd, Env: env, WorkingDir: cfg.WorkingDir, User: cfg.User}
	return mutate.ConfigFile(img, cf)
}

// FromBinary is an image holding the host file bin at /<base name of bin>
// (or at inImage when it is not ""), run as the entrypoint, plus links:
// symbolic links to it (for a multi-call binary like busybox, e.g.
// "/bin/sh"). The binary must be static: the image has nothing else.
func FromBinary(bin, inImage string, links ...string) (v1.Image, error) {
	if inImage == "" {
		inImage = "/" + filepath.Base(bin)
	}
	files := []File{{Path: inImage, Source: bin, Mode: 0o755}, {Path: "/tmp/", Mode: 0o777 | fs.ModeSticky}}
	for _, l := range links {
		files = append(files, File{Path: l, Link: inImage})
	}
	return Build(files, Config{Entrypoint: []string{inImage}})
}

// FromDir is an image whose root file system is the host folder dir.
func FromDir(dir string, cfg Config) (v1.Image, error) {
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := File{Path: "/" + filepath.ToSlash(rel), Mode: info.Mode().Perm() | info.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)}
		switch {
		case d.IsDir():
			f.Path += "/"
		case info.Mode()&fs.ModeSymlink != 0:
			if f.Link, err = os.Readlink(p); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			f.Source = p
		default:
			return nil // devices, sockets, pipes: not in images
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return Build(files, cfg)
}

// layerTar is the uncompressed layer holding files, with parent
// directories added and entries sorted by path.
func layerTar(files []File) ([]byte, error) {
	entries := map[string]File{}
	addDir := func(dir string) {
		for d := dir; d != "." && d != "/" && d != ""; d = path.Dir(d) {
			if _, ok := entries[d+"/"]; !ok {
				entries[d+"/"] = File{Path: d + "/", Mode: 0o755}
			}
		}
	}
	for _, f := range files {
		p := strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		if p == "" {
			continue
		}
		if strings.HasSuffix(f.Path, "/") && f.Source == "" && f.Data == nil && f.Link == "" {
			p += "/"
			addDir(path.Dir(strings.TrimSuffix(p, "/")))
		} else {
			addDir(path.Dir(p))
		}
		f.Path = p
		entries[p] = f
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		f := entries[n]
		mode := int64(f.Mode.Perm() | f.Mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		h := &tar.Header{Name: n, ModTime: epoch, Mode: mode, Format: tar.FormatPAX}
		var data []byte
		switch {
		case strings.HasSuffix(n, "/"):
			h.Typeflag = tar.TypeDir
			if h.Mode == 0 {
				h.Mode = 0o755
			}
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		case f.Source != "":
			b, err := os.ReadFile(f.Source)
			if err != nil {
				return nil, err
			}
			data = b
		default:
			data = f.Data
		}
		if h.Typeflag == 0 {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
			if h.Mode == 0 {
				h.Mode = 0o644
			}
		}
		// Tar's mode bits for setuid and friends differ from fs.FileMode's.
		h.Mode = tarMode(fs.FileMode(h.Mode))
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func tarMode(m fs.FileMode) int64 {
	v := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return v
}

// Save writes img, tagged ref, to file as a docker-archive tarball (what
// `docker save` writes and `ctr images import` reads).
func Save(img v1.Image, ref, file string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	return tarball.WriteToFile(file, tag, img)
}
