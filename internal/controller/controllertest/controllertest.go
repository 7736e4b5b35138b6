package controllertest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/server"
)

// StartServer starts an in-memory control plane that stops when the test
// ends, and returns its admin loopback config.
func StartServer(t testing.TB) *rest.Config {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := server.Start(ctx, server.Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", Port: 0, InMemory: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		cancel()
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { cancel(); s.Wait() })
	return s.LoopbackConfig()
}

// Run runs c with workers workers until the test ends; an error from Run
// fails the test. Cleanups run last first, so c stops before the server.
func Run(t testing.TB, c controller.Controller, workers int) {
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
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
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
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			ok, err := cond()
			last = err
			return ok, nil
		})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last error: %v)", what, err, last)
	}
}
