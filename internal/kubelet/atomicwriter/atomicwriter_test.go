package atomicwriter

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteSwapsAtomically(t *testing.T) {
	dir := t.TempDir()
	w := &Writer{Dir: dir}
	changed, err := w.Write(map[string]File{
		"a":         {Data: []byte("A1"), Mode: 0o644},
		"sub/b.txt": {Data: []byte("B1"), Mode: 0o600},
		"gone":      {Data: []byte("G"), Mode: 0o644},
	})
	if err != nil || !changed {
		t.Fatalf("first write: changed=%v err=%v", changed, err)
	}
	ts1, err := os.Readlink(filepath.Join(dir, DataDirName))
	if err != nil || !strings.HasPrefix(ts1, "..") {
		t.Fatalf("..data -> %q, %v", ts1, err)
	}
	// User-visible names are symlinks into ..data.
	for name, want := range map[string]string{"a": "..data/a", "sub": "..data/sub", "gone": "..data/gone"} {
		if got, err := os.Readlink(filepath.Join(dir, name)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", name, got, err, want)
		}
	}
	if got := read(t, filepath.Join(dir, "sub/b.txt")); got != "B1" {
		t.Errorf("sub/b.txt = %q", got)
	}
	fi, err := os.Stat(filepath.Join(dir, "sub/b.txt"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("sub/b.txt mode = %v, %v", fi.Mode(), err)
	}

	// The same payload again changes nothing.
	changed, err = w.Write(map[string]File{
		"a":         {Data: []byte("A1"), Mode: 0o644},
		"sub/b.txt": {Data: []byte("B1"), Mode: 0o600},
		"gone":      {Data: []byte("G"), Mode: 0o644},
	})
	if err != nil || changed {
		t.Fatalf("same write: changed=%v err=%v", changed, err)
	}
	if ts, _ := os.Readlink(filepath.Join(dir, DataDirName)); ts != ts1 {
		t.Errorf("..data moved to %q on an unchanged write", ts)
	}

	// A held-open old file keeps its content; new opens see the new set;
	// names no longer in the payload and the old version go.
	old, err := os.Open(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	changed, err = w.Write(map[string]File{
		"a":   {Data: []byte("A2"), Mode: 0o400},
		"new": {Data: []byte("N"), Mode: 0o644},
	})
	if err != nil || !changed {
		t.Fatalf("second write: changed=%v err=%v", changed, err)
	}
	if got := read(t, filepath.Join(dir, "a")); got != "A2" {
		t.Errorf("a = %q after the update", got)
	}
	b := make([]byte, 8)
	n, _ := old.Read(b)
	if string(b[:n]) != "A1" {
		t.Errorf("open old file reads %q", b[:n])
	}
	if fi, err := os.Stat(filepath.Join(dir, "a")); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("a mode = %v, %v", fi.Mode(), err)
	}
	ts2, _ := os.Readlink(filepath.Join(dir, DataDirName))
	got := names(t, dir)
	want := []string{DataDirName, ts2, "a", "new"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("dir holds %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, ts1)); !os.IsNotExist(err) {
		t.Errorf("old version %s still there: %v", ts1, err)
	}

	// A name the writer did not make (a directory made for a subPath)
	// stays; the writer's own names that are gone are removed.
	if err := os.Mkdir(filepath.Join(dir, "madeforsubpath"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(map[string]File{"a": {Data: []byte("A3"), Mode: 0o400}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("new was not removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "madeforsubpath")); err != nil {
		t.Errorf("a directory the writer did not make was removed: %v", err)
	}
	os.Remove(filepath.Join(dir, "madeforsubpath"))

	// An empty payload leaves only ..data and its (empty) version.
	if _, err := w.Write(map[string]File{}); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 2 {
		t.Errorf("after an empty write: %v", got)
	}
}

func TestWriteReplacesPlainFiles(t *testing.T) {
	// A directory written before the writer was used (plain files): the
	// first write replaces them.
	dir := t.TempDir()
	for _, name := range []string{"a", "stale"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("plain"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := (&Writer{Dir: dir}).Write(map[string]File{"a": {Data: []byte("A"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "a")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("a is not a symlink: %v %v", fi, err)
	}
	if got := read(t, filepath.Join(dir, "a")); got != "A" {
		t.Errorf("a = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "stale")); !os.IsNotExist(err) {
		t.Errorf("stale plain file kept: %v", err)
	}
}

func TestSetPerms(t *testing.T) {
	dir := t.TempDir()
	calls := 0
	w := &Writer{Dir: dir, SetPerms: func(d string) error {
		calls++
		return filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			return os.Chmod(p, 0o440)
		})
	}}
	payload := map[string]File{"a": {Data: []byte("A"), Mode: 0o400}}
	for range 2 {
		if _, err := w.Write(payload); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Errorf("SetPerms ran %d times, want once (the second write is unchanged)", calls)
	}
	if fi, err := os.Stat(filepath.Join(dir, "a")); err != nil || fi.Mode().Perm() != 0o440 {
		t.Errorf("a mode = %v, %v", fi.Mode(), err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		ok    bool
	}{
		{[]string{"a", "b/c", "b/d"}, true},
		{[]string{"/abs"}, false},
		{[]string{"../x"}, false},
		{[]string{"a/../../x"}, false},
		{[]string{"..data"}, false},
		{[]string{"a/./b"}, false},
		{[]string{""}, false},
		{[]string{"a", "a/b"}, false},
	} {
		payload := map[string]File{}
		for _, p := range tc.paths {
			payload[p] = File{}
		}
		if err := Validate(payload); (err == nil) != tc.ok {
			t.Errorf("Validate(%v) = %v, want ok=%v", tc.paths, err, tc.ok)
		}
	}
	if _, err := (&Writer{Dir: t.TempDir()}).Write(map[string]File{"../x": {}}); err == nil {
		t.Error("Write accepted an escaping path")
	}
}
