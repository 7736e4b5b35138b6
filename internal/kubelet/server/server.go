package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/api/stats"
	"plainkube.dev/plainkube/internal/kubelet/logs"
)

// DefaultPort is the kubelet API's port, as upstream.
const DefaultPort = 10250

// Handler serves the agent API from the pod directories under
// dataDir/pods (named <namespace>_<pod>_<uid>).
type Handler struct {
	DataDir string
	// Streams serves /exec, /attach and /portForward (nil: 501).
	Streams Streamer
	// Summary is the node's usage for /stats/summary (stats.go) and
	// /metrics/resource (metrics.go); nil: 501, and scrape_error 1.
	Summary func() (*stats.Summary, error)
	// Pods lists the pods the agent runs, for /pods (pods.go); nil: 501.
	Pods func() []corev1.Pod
	// Metrics are served on /metrics (metrics.go); nil: 501.
	Metrics *Metrics
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/healthz":
		w.Write([]byte("ok"))
	case strings.HasPrefix(r.URL.Path, "/containerLogs/"):
		h.containerLogs(w, r)
	case r.URL.Path == "/stats/summary":
		h.statsSummary(w, r)
	case r.URL.Path == "/pods" || r.URL.Path == "/pods/":
		h.pods(w, r)
	case isSubpath(r.URL.Path, "/metrics"):
		h.metrics(w, r)
	default:
		if !h.serveStream(w, r) {
			http.NotFound(w, r)
		}
	}
}

func (h *Handler) containerLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		http.Error(w, "expected /containerLogs/{namespace}/{pod}/{container}", http.StatusBadRequest)
		return
	}
	ns, pod, container := parts[0], parts[1], parts[2]
	for _, p := range parts {
		if strings.ContainsAny(p, `/\`) || p == "." || p == ".." {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
	}
	dir, err := h.podDir(ns, pod)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	o, err := options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	err = logs.Write(r.Context(), &flushWriter{w: w}, filepath.Join(dir, container), o)
	if errors.Is(err, os.ErrNotExist) {
		http.Error(w, fmt.Sprintf("container %q in pod %q has no logs", container, pod), http.StatusNotFound)
	} else if errors.Is(err, logs.ErrNoPrevious) {
		http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod), http.StatusBadRequest)
	} else if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// podDir finds the newest directory of the pod (a pod recreated with the
// same name has a new UID and so a new directory).
func (h *Handler) podDir(ns, pod string) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(h.DataDir, "pods", ns+"_"+pod+"_*"))
	var best string
	var bestTime time.Time
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err == nil && fi.IsDir() && (best == "" || fi.ModTime().After(bestTime)) {
			best, bestTime = m, fi.ModTime()
		}
	}
	if best == "" {
		return "", fmt.Errorf("pod %s/%s has no logs on this node", ns, pod)
	}
	return best, nil
}

// options reads the pods/log query parameters.
func options(r *http.Request) (logs.Options, error) {
	q := r.URL.Query()
	o := logs.Options{Follow: q.Get("follow") == "true", Previous: q.Get("previous") == "true", Timestamps: q.Get("timestamps") == "true"}
	intParam := func(name string) (*int64, error) {
		v := q.Get(name)
		if v == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid %s %q", name, v)
		}
		return &n, nil
	}
	var err error
	if o.TailLines, err = intParam("tailLines"); err != nil {
		return o, err
	}
	if o.LimitBytes, err = intParam("limitBytes"); err != nil {
		return o, err
	}
	sinceSeconds, err := intParam("sinceSeconds")
	if err != nil {
		return o, err
	}
	if sinceSeconds != nil {
		t := time.Now().Add(-time.Duration(*sinceSeconds) * time.Second)
		o.Since = &t
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return o, fmt.Errorf("invalid sinceTime %q", v)
		}
		o.Since = &t
	}
	return o, nil
}

// flushWriter flushes after every write, so followed logs stream.
type flushWriter struct{ w http.ResponseWriter }

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// ServeListener serves h on ln with TLS until ctx ends; tlsConfig must
// verify the client certificates given, and h authorize (Auth.Wrap).
func ServeListener(ctx context.Context, ln net.Listener, tlsConfig *tls.Config, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(tls.NewListener(ln, tlsConfig)); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
