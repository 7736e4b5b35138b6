package controllertest

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/reconcile"
	"plainkube.dev/plainkube/internal/server"
)

// NewServer starts an in-memory control plane that stops when the test
// ends, and returns it (for its KubeconfigPath, say).
func NewServer(t testing.TB) *server.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := server.Start(ctx, server.Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", Port: 0, InMemory: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		cancel()
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { cancel(); s.Wait() })
	return s
}

// StartServer starts a control plane as NewServer does and returns its
// admin loopback config.
func StartServer(t testing.TB) *rest.Config {
	t.Helper()
	return NewServer(t).LoopbackConfig()
}

// Run runs c with workers workers until the test ends; an error from Run
// fails the test. Cleanups run last first, so c stops before the server.
func Run(t testing.TB, c reconcile.Controller, workers int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, workers) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s controller: %v", c.Name(), err)
		}
	})
}

// Clientset is a clientset for cfg.
func Clientset(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Logger logs through t at debug level, so a failing test shows what the
// controller did.
func Logger(t testing.TB) *slog.Logger {
	return LoggerAt(t, slog.LevelDebug)
}

// LoggerAt logs through t what is at level or above.
func LoggerAt(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: level}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Eventually polls cond every 20 ms for up to 10 s and fails the test if it
// never holds; cond's last error is reported.
func Eventually(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	EventuallyWithin(t, 20*time.Millisecond, 10*time.Second, what, cond)
}

// EventuallyWithin is Eventually polling every interval for up to timeout.
// An error from cond does not stop the polling; the last one is reported.
func EventuallyWithin(t testing.TB, interval, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true,
		func(context.Context) (bool, error) {
			ok, err := cond()
			last = err
			return ok, nil
		})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last error: %v)", what, err, last)
	}
}

// RolloutStatus runs `kubectl rollout status what` (in namespace default,
// for up to 30 s) against the cluster of kubeconfig, which must report the
// rollout finished. Without kubectl installed it only logs so.
func RolloutStatus(t testing.TB, kubeconfig, what string) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("no kubectl; skipping kubectl rollout status")
		return
	}
	out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", "default", "rollout", "status", what, "--timeout=30s").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl rollout status %s: %v\n%s", what, err, out)
	}
	t.Logf("kubectl rollout status: %s", out)
}
