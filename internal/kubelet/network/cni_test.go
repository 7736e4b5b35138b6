package network

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCNIConfig(t *testing.T) {
	tests := []struct {
		cidr, subnet, route string
		mtu                 int
		wantErr             bool
	}{
		{cidr: "10.42.0.0/24", subnet: "10.42.0.0/24", route: "0.0.0.0/0"},
		{cidr: "10.42.1.0/24", subnet: "10.42.1.0/24", route: "0.0.0.0/0", mtu: 1450},
		{cidr: "10.42.3.7/24", subnet: "10.42.3.0/24", route: "0.0.0.0/0"}, // masked
		{cidr: "fd00:42::/64", subnet: "fd00:42::/64", route: "::/0"},
		{cidr: "10.42.0.0", wantErr: true},
		{cidr: "", wantErr: true},
	}
	for _, tt := range tests {
		b, err := cniConfig(tt.cidr, "/data/ipam", tt.mtu)
		if tt.wantErr {
			if err == nil {
				t.Errorf("%q: no error", tt.cidr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.cidr, err)
		}
		var got any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		bridge := map[string]any{
			"type": "bridge", "bridge": BridgeName(netip.MustParsePrefix(tt.subnet)), "isGateway": true, "hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  []any{[]any{map[string]any{"subnet": tt.subnet}}},
				"routes":  []any{map[string]any{"dst": tt.route}},
				"dataDir": "/data/ipam",
			},
		}
		if tt.mtu != 0 {
			bridge["mtu"] = float64(tt.mtu)
		}
		want := map[string]any{
			"cniVersion": "1.0.0",
			"name":       "plainkube",
			"plugins": []any{
				bridge,
				map[string]any{"type": "portmap", "capabilities": map[string]any{"portMappings": true}},
				map[string]any{"type": "loopback"},
			},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%q (-want +got):\n%s", tt.cidr, d)
		}
	}
}

func TestWriteCNIConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net.d")
	if err := writeCNIConfig(dir, "10.42.0.0/24", "/ipam", 0); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "10-plainkube.conflist" {
		t.Fatalf("files = %v", ents)
	}
	fi, _ := ents[0].Info()
	// Unchanged: not rewritten (containerd reloads on every write).
	if err := writeCNIConfig(dir, "10.42.0.0/24", "/ipam", 0); err != nil {
		t.Fatal(err)
	}
	fi2, _ := os.Stat(filepath.Join(dir, ents[0].Name()))
	if !os.SameFile(fi, fi2) {
		t.Error("rewritten although unchanged")
	}
}
