package containerd

import (
	"context"
	"strings"
	"testing"
)

func TestSocketPath(t *testing.T) {
	for in, want := range map[string]string{
		"unix:///run/containerd/containerd.sock": "/run/containerd/containerd.sock",
		"/run/containerd/containerd.sock":        "/run/containerd/containerd.sock",
		"tcp://127.0.0.1:1234":                   "only unix:// sockets",
		"unix://relative.sock":                   "must be absolute",
		"":                                       "must be absolute",
	} {
		got, err := SocketPath(in)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, want) {
			t.Errorf("SocketPath(%q) = %q, want %q", in, got, want)
		}
	}
	if _, err := Connect(context.Background(), "unix://"+t.TempDir()+"/none.sock", ConnectOptions{}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Connect to a missing socket: %v", err)
	}
}
