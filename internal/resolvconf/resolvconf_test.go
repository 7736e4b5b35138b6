package resolvconf

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	rc := Parse([]byte("# comment\nnameserver 10.0.0.1\nnameserver 10.0.0.2 ; x\ndomain old\nsearch a.example b.example\noptions ndots:2 edns0\nnameserver\n"))
	if !slices.Equal(rc.Servers, []string{"10.0.0.1", "10.0.0.2"}) || !slices.Equal(rc.Searches, []string{"a.example", "b.example"}) ||
		!slices.Equal(rc.Options, []string{"ndots:2", "edns0"}) {
		t.Errorf("parsed %+v", rc)
	}
}

func TestHostFollowsSystemdResolved(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stub := write("stub", "nameserver 127.0.0.53\nsearch lan\n")
	real := write("real", "nameserver 192.0.2.1\nnameserver 192.0.2.2\nsearch corp.example\n")
	empty := write("empty", "# nothing\n")
	plain := write("plain", "nameserver 192.0.2.9\n")
	for _, tc := range []struct {
		name, file, resolved string
		want                 []string
	}{
		{"stub is followed", stub, real, []string{"192.0.2.1", "192.0.2.2"}},
		{"stub kept without the resolved file", stub, filepath.Join(dir, "missing"), []string{"127.0.0.53"}},
		{"stub kept when the resolved file names no server", stub, empty, []string{"127.0.0.53"}},
		{"non-loopback servers are used as they are", plain, real, []string{"192.0.2.9"}},
		{"missing file", filepath.Join(dir, "missing"), real, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := host(tc.file, tc.resolved); !slices.Equal(got.Servers, tc.want) {
				t.Errorf("servers = %v, want %v", got.Servers, tc.want)
			}
		})
	}
}
