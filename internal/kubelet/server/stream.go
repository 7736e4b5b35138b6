package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/proxy"
)

// ErrNotFound is wrapped by a Streamer's errors for a pod or container
// that is not running on this node; the agent answers 404.
var ErrNotFound = errors.New("not found")

// StreamOptions are the streams an exec or attach session asks for.
type StreamOptions struct {
	Stdin, Stdout, Stderr, TTY bool
}

// Streamer finds a pod's sandbox or container and asks the container
// runtime for the URL of its streaming server that serves the session (the
// CRI Exec, Attach and PortForward calls). The agent implements it; the
// returned URLs are on the loopback interface.
type Streamer interface {
	ExecURL(ctx context.Context, namespace, pod, container string, cmd []string, opts StreamOptions) (*url.URL, error)
	AttachURL(ctx context.Context, namespace, pod, container string, opts StreamOptions) (*url.URL, error)
	PortForwardURL(ctx context.Context, namespace, pod string, ports []int32) (*url.URL, error)
	// Run runs cmd in the container to its end and returns its output
	// (stdout, then stderr).
	Run(ctx context.Context, namespace, pod, container string, cmd []string) ([]byte, error)
}

// serveStream serves /exec, /attach, /portForward and /run when the path
// is one of theirs, and says whether it was.
func (h *Handler) serveStream(w http.ResponseWriter, r *http.Request) bool {
	kind, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if !ok {
		return false
	}
	var want int
	switch kind {
	case "exec", "attach", "run":
		want = 3
	case "portForward":
		want = 2
	default:
		return false
	}
	parts := strings.Split(rest, "/")
	// Upstream also accepts a pod UID between the pod and container names.
	if kind != "portForward" && len(parts) == 4 {
		parts = []string{parts[0], parts[1], parts[3]}
	}
	if kind == "portForward" && len(parts) == 3 {
		parts = parts[:2]
	}
	if len(parts) != want || slices.Contains(parts, "") {
		form := "/" + kind + "/{namespace}/{pod}"
		if want == 3 {
			form += "/{container}"
		}
		http.Error(w, "expected "+form, http.StatusBadRequest)
		return true
	}
	if h.Streams == nil {
		http.Error(w, kind+" is not served by this agent (no container runtime)", http.StatusNotImplemented)
		return true
	}
	ctx := r.Context()
	if kind == "run" {
		h.run(w, r, parts)
		return true
	}
	var u *url.URL
	var err error
	switch kind {
	case "exec", "attach":
		opts, oerr := streamOptions(r)
		if oerr != nil {
			http.Error(w, oerr.Error(), http.StatusBadRequest)
			return true
		}
		if kind == "exec" {
			cmd := r.URL.Query()["command"]
			if len(cmd) == 0 {
				http.Error(w, "you must specify at least 1 command", http.StatusBadRequest)
				return true
			}
			u, err = h.Streams.ExecURL(ctx, parts[0], parts[1], parts[2], cmd, opts)
		} else {
			u, err = h.Streams.AttachURL(ctx, parts[0], parts[1], parts[2], opts)
		}
	case "portForward":
		ports, perr := forwardPorts(r)
		if perr != nil {
			http.Error(w, perr.Error(), http.StatusBadRequest)
			return true
		}
		u, err = h.Streams.PortForwardURL(ctx, parts[0], parts[1], ports)
	}
	if errors.Is(err, ErrNotFound) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return true
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return true
	}
	// The runtime's streaming server takes the (SPDY or WebSocket) upgrade
	// itself; only upgrade requests are proxied.
	p := proxy.NewUpgradeAwareHandler(u, nil, false, true, plainResponder{})
	p.ServeHTTP(w, r)
	return true
}

// run serves POST /run/{namespace}/{pod}/{container}?cmd=…: the command
// (split at spaces, as upstream) runs to its end and its output is the
// answer.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, parts []string) {
	if r.Method != http.MethodPost {
		http.Error(w, "run takes POST", http.StatusMethodNotAllowed)
		return
	}
	cmd := strings.Fields(r.URL.Query().Get("cmd"))
	if len(cmd) == 0 {
		http.Error(w, "you must specify a command (cmd=…)", http.StatusBadRequest)
		return
	}
	out, err := h.Streams.Run(r.Context(), parts[0], parts[1], parts[2], cmd)
	if errors.Is(err, ErrNotFound) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write(out)
}

// streamOptions reads upstream's exec and attach stream parameters
// (input, output, error, tty; "1" or "true" turns one on).
func streamOptions(r *http.Request) (StreamOptions, error) {
	q := r.URL.Query()
	on := func(k string) bool { v := q.Get(k); return v == "1" || v == "true" }
	o := StreamOptions{Stdin: on("input"), Stdout: on("output"), Stderr: on("error"), TTY: on("tty")}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return o, errors.New("you must specify at least 1 of stdin, stdout, stderr")
	}
	if o.TTY && o.Stderr {
		o.Stderr = false // a terminal has one output stream, as upstream
	}
	return o, nil
}

// forwardPorts reads the optional port parameter (comma-separated ports,
// possibly repeated); SPDY clients name ports per stream instead.
func forwardPorts(r *http.Request) ([]int32, error) {
	var ports []int32
	for _, v := range r.URL.Query()["port"] {
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("invalid port %q", s)
			}
			ports = append(ports, int32(n))
		}
	}
	return ports, nil
}

// plainResponder reports proxy set-up errors as plain text, with the
// status code of those that carry one.
type plainResponder struct{}

func (plainResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	code := http.StatusInternalServerError
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code != 0 {
		code = int(st.Status().Code)
	}
	http.Error(w, err.Error(), code)
}
