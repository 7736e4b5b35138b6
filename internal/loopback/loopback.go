package loopback

import (
	"context"
	"io"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/auth"
)

// Host is the placeholder host of loopback configs.
const Host = "http://plainkube.loopback"

// Config returns a client config whose requests go straight to h as user.
func Config(h http.Handler, user *auth.User) *rest.Config {
	return &rest.Config{
		Host:      Host,
		Transport: &Transport{Handler: h, User: user},
		QPS:       -1, // no client-side rate limit within the process
		UserAgent: "plainkube-loopback/" + user.Name,
	}
}

// Transport is the in-memory RoundTripper.
type Transport struct {
	Handler http.Handler
	User    *auth.User
}

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(auth.WithUser(req.Context(), t.User))
	r := req.Clone(ctx)
	if r.Body == nil {
		r.Body = http.NoBody
	}
	r.RemoteAddr = "127.0.0.1:0"
	r.RequestURI = r.URL.RequestURI()
	pr, pw := io.Pipe()
	rw := &responseWriter{header: http.Header{}, body: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				pw.CloseWithError(http.ErrAbortHandler)
			}
			rw.writeHeaderOnce(http.StatusOK)
			pw.Close()
		}()
		t.Handler.ServeHTTP(rw, r)
	}()
	select {
	case <-rw.ready:
	case <-req.Context().Done():
		cancel()
		return nil, req.Context().Err()
	}
	return &http.Response{
		Status: http.StatusText(rw.code), StatusCode: rw.code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rw.sent, Body: &body{ReadCloser: pr, cancel: cancel}, ContentLength: -1, Request: req,
	}, nil
}

// body cancels the handler's context when the client closes the response.
type body struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *body) Close() error {
	b.cancel()
	return b.ReadCloser.Close()
}

type responseWriter struct {
	header http.Header
	sent   http.Header
	code   int
	body   *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) { w.writeHeaderOnce(code) }

func (w *responseWriter) writeHeaderOnce(code int) {
	w.once.Do(func() {
		w.code = code
		w.sent = w.header.Clone()
		close(w.ready)
	})
}

func (w *responseWriter) Write(p []byte) (int, error) {
	w.writeHeaderOnce(http.StatusOK)
	return w.body.Write(p)
}

// Flush is a no-op: every Write already reaches the reader.
func (w *responseWriter) Flush() {}
