package atomicwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// DataDirName is the symlink to the current version.
const DataDirName = "..data"

const (
	newDataDirName = "..data_tmp"
	tsPrefix       = ".."
	tsLayout       = "2006_01_02_15_04_05."
)

// File is one file of a payload.
type File struct {
	Data []byte
	Mode fs.FileMode // permission bits only
	// FsUser, when set, owns the file (a projected service account token
	// for a pod whose containers all run as one user).
	FsUser *int64
}

// Writer writes payloads into one target directory. It is not safe for
// concurrent use on the same directory.
type Writer struct {
	Dir string
	// SetPerms, when set, runs on a new version's directory before it
	// becomes current (upstream applies fsGroup ownership there).
	SetPerms func(dir string) error
}

// Validate checks the paths of a payload: relative, clean, no element
// "..", none starting with ".." (those names are the writer's own), and
// no path that is a prefix directory of another.
func Validate(payload map[string]File) error {
	for p := range payload {
		if err := validatePath(p); err != nil {
			return err
		}
	}
	for p := range payload {
		for q := range payload {
			if strings.HasPrefix(q, p+"/") {
				return fmt.Errorf("path %q is both a file and the directory of %q", p, q)
			}
		}
	}
	return nil
}

func validatePath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case len(p) > 4096:
		return fmt.Errorf("invalid path: must be less than or equal to 4096 characters")
	case path.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative", p)
	case path.Clean(p) != p:
		return fmt.Errorf("invalid path %q: must be clean", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
		if len(e) > 255 {
			return fmt.Errorf("invalid path %q: each element must be at most 255 characters", p)
		}
	}
	return nil
}

// Write makes the target directory hold exactly payload (paths relative
// to it, slash-separated), switching from the previous content at once.
// It reports whether anything changed.
func (w *Writer) Write(payload map[string]File) (changed bool, err error) {
	if err := Validate(payload); err != nil {
		return false, err
	}
	if err := os.MkdirAll(w.Dir, 0o755); err != nil {
		return false, err
	}
	oldTs, err := os.Readlink(filepath.Join(w.Dir, DataDirName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if oldTs != "" && w.same(filepath.Join(w.Dir, oldTs), payload) {
		// The links may still be missing if an earlier write stopped
		// half-way; creating them again is harmless.
		return false, w.link(payload)
	}
	tsDir, err := os.MkdirTemp(w.Dir, tsPrefix+time.Now().UTC().Format(tsLayout))
	if err != nil {
		return false, err
	}
	if err := writePayload(tsDir, payload); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	if w.SetPerms != nil {
		if err := w.SetPerms(tsDir); err != nil {
			_ = os.RemoveAll(tsDir)
			return false, err
		}
	}
	tmpLink := filepath.Join(w.Dir, newDataDirName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	if err := os.Rename(tmpLink, filepath.Join(w.Dir, DataDirName)); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	if err := w.link(payload); err != nil {
		return true, err
	}
	if err := w.removeStale(payload, oldTs); err != nil {
		return true, err
	}
	if oldTs != "" {
		if err := os.RemoveAll(filepath.Join(w.Dir, oldTs)); err != nil {
			return true, err
		}
	}
	return true, nil
}

// topNames are the first elements of the payload's paths: the
// user-visible names of the target directory.
func topNames(payload map[string]File) map[string]bool {
	names := map[string]bool{}
	for p := range payload {
		first, _, _ := strings.Cut(p, "/")
		names[first] = true
	}
	return names
}

// link makes name -> ..data/name for every top-level name.
func (w *Writer) link(payload map[string]File) error {
	for _, name := range slices.Sorted(maps.Keys(topNames(payload))) {
		p := filepath.Join(w.Dir, name)
		want := filepath.Join(DataDirName, name)
		if got, err := os.Readlink(p); err == nil && got == want {
			continue
		}
		// Something else may be there (a file from before the writer
		// was used): replace it.
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		if err := os.Symlink(want, p); err != nil {
			return err
		}
	}
	return nil
}

// removeStale removes the user-visible names of the old version oldTs
// that payload does not have. Other names (a directory the agent made for
// a subPath that did not exist) stay, as upstream. On the first write
// (no old version) every name not in payload and not starting with ".."
// goes: the directory held whatever was there before the writer.
func (w *Writer) removeStale(payload map[string]File, oldTs string) error {
	keep := topNames(payload)
	var old map[string]bool
	if oldTs != "" {
		old = map[string]bool{}
		ents, err := os.ReadDir(filepath.Join(w.Dir, oldTs))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, e := range ents {
			old[e.Name()] = true
		}
	}
	ents, err := os.ReadDir(w.Dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, "..") || keep[name] || (old != nil && !old[name]) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(w.Dir, name)); err != nil {
			return err
		}
	}
	return nil
}

func writePayload(dir string, payload map[string]File) error {
	if err := os.Chmod(dir, 0o755); err != nil { // MkdirTemp makes it 0700
		return err
	}
	for _, p := range slices.Sorted(maps.Keys(payload)) {
		f := payload[p]
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, f.Mode.Perm()); err != nil {
			return err
		}
		if err := os.Chmod(full, f.Mode.Perm()); err != nil { // not masked by the umask
			return err
		}
		if f.FsUser != nil {
			if err := os.Chown(full, int(*f.FsUser), -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// same reports whether tsDir holds exactly payload, with the same modes
// and owners.
func (w *Writer) same(tsDir string, payload map[string]File) bool {
	n := 0
	err := filepath.WalkDir(tsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(tsDir, p)
		if err != nil {
			return err
		}
		f, ok := payload[filepath.ToSlash(rel)]
		if !ok {
			return errDiffers
		}
		n++
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm()
		if w.SetPerms != nil {
			// SetPerms may have added bits: those asked for must be there.
			mode &= f.Mode.Perm()
		}
		if !fi.Mode().IsRegular() || mode != f.Mode.Perm() || (f.FsUser != nil && fileUID(fi) != *f.FsUser) {
			return errDiffers
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, f.Data) {
			return errDiffers
		}
		return nil
	})
	return err == nil && n == len(payload)
}

var errDiffers = errors.New("differs")
