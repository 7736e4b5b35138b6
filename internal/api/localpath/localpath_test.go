package localpath

import "testing"

func TestFolderIn(t *testing.T) {
	for _, tt := range []struct {
		dir, path string
		want      bool
	}{
		{"/data/storage", "/data/storage/pvc-1_ns_c", true},
		{"/data/storage/", "/data/storage/pvc-1_ns_c", true},
		{"/data/storage", "/data/storage/pvc-", false},
		{"/data/storage", "/data/storage/other", false},
		{"/data/storage", "/data/storage", false},
		{"/data/storage", "/data/storage/pvc-1/inner", false},
		{"/data/storage", "/data/storage/../etc/pvc-1", false},
		{"/data/storage", "/data/other/pvc-1", false},
		{"/data/storage", "pvc-1", false},
		{"", "/pvc-1", false},
		{"relative", "relative/pvc-1", false},
	} {
		if got := FolderIn(tt.dir, tt.path); got != tt.want {
			t.Errorf("FolderIn(%q, %q) = %v, want %v", tt.dir, tt.path, got, tt.want)
		}
	}
}
