package containerd

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestConfig(t *testing.T) {
	cfg := Config(Options{DataDir: "/d", SandboxImage: "p:1", CNIBinDir: "/cni", Snapshotter: "overlayfs"})
	for _, want := range []string{
		`root = "/d/root"`,
		`address = "/d/containerd.sock"`,
		`restrict_oom_score_adj = true`,
		`sandbox_image = "p:1"`,
		`snapshotter = "overlayfs"`,
		`bin_dir = "/cni"`,
		`conf_dir = "/d/cni/net.d"`,
		// exec/attach/port-forward URLs: reachable from this host only
		// (the agent API proxies to them).
		`stream_server_address = "127.0.0.1"`,
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %s:\n%s", want, cfg)
		}
	}
}

// SkipUnlessRunnable skips t unless it runs as root with containerd, ctr
// and runc installed.
func skipUnlessRunnable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run containerd")
	}
	if err := CheckInstalled(""); err != nil {
		t.Skip(err.Error())
	}
}

func TestStartStop(t *testing.T) {
	skipUnlessRunnable(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := Start(ctx, Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	v, err := p.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "containerd://") {
		t.Errorf("version = %q, want containerd://…", v)
	}
	if _, err := p.Images.ListImages(ctx, nil); err != nil {
		t.Errorf("ListImages: %v", err)
	}
}
