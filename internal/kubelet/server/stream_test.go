package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// fakeStreamer records what it is asked and points every session at a
// streaming server that upgrades and echoes.
type fakeStreamer struct {
	backend *url.URL
	asked   []string
}

func (f *fakeStreamer) ExecURL(_ context.Context, ns, pod, c string, cmd []string, o StreamOptions) (*url.URL, error) {
	if pod == "gone" {
		return nil, fmt.Errorf("container not found (%q): %w", c, ErrNotFound)
	}
	f.asked = append(f.asked, fmt.Sprintf("exec %s/%s/%s %q %+v", ns, pod, c, cmd, o))
	return f.backend, nil
}

func (f *fakeStreamer) AttachURL(_ context.Context, ns, pod, c string, o StreamOptions) (*url.URL, error) {
	f.asked = append(f.asked, fmt.Sprintf("attach %s/%s/%s %+v", ns, pod, c, o))
	return f.backend, nil
}

func (f *fakeStreamer) PortForwardURL(_ context.Context, ns, pod string, ports []int32) (*url.URL, error) {
	f.asked = append(f.asked, fmt.Sprintf("portforward %s/%s %v", ns, pod, ports))
	return f.backend, nil
}

func (f *fakeStreamer) Run(_ context.Context, ns, pod, c string, cmd []string) ([]byte, error) {
	f.asked = append(f.asked, fmt.Sprintf("run %s/%s/%s %q", ns, pod, c, cmd))
	return []byte("ran"), nil
}

func echoUpgrader(t *testing.T) *url.URL {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
		io.Copy(conn, buf)
	}))
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL + "/exec/token")
	return u
}

func TestStreamEndpoints(t *testing.T) {
	f := &fakeStreamer{backend: echoUpgrader(t)}
	h := &Handler{DataDir: t.TempDir(), Streams: f}
	cases := []struct {
		path string
		code int
		body string
	}{
		{"/exec/default/web/c?output=1", 400, "you must specify at least 1 command"},
		{"/exec/default/web/c?command=ls", 400, "you must specify at least 1 of stdin, stdout, stderr"},
		{"/exec/default/web?command=ls&output=1", 400, "expected /exec/{namespace}/{pod}/{container}"},
		{"/exec/default/gone/c?command=ls&output=1", 404, `container not found ("c")`},
		{"/portForward/default/web?port=x", 400, `invalid port "x"`},
		{"/exec/default/web/c?command=ls&output=1", 400, "Upgrade request required"},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", c.path, nil))
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("%s: %d %q, want %d %q", c.path, rec.Code, rec.Body, c.code, c.body)
		}
	}
	f.asked = nil
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/run/default/web/c?cmd=cat+/etc/hostname", nil))
	if rec.Code != 200 || rec.Body.String() != "ran" || len(f.asked) != 1 || f.asked[0] != `run default/web/c ["cat" "/etc/hostname"]` {
		t.Errorf("run: %d %q, runtime asked %q", rec.Code, rec.Body, f.asked)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/run/default/web/c", nil))
	if rec.Code != 400 {
		t.Errorf("run without cmd: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	(&Handler{}).ServeHTTP(rec, httptest.NewRequest("POST", "/attach/default/web/c?output=1", nil))
	if rec.Code != http.StatusNotImplemented {
		t.Errorf("without a runtime: %d %s", rec.Code, rec.Body)
	}

	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, c := range []struct{ path, want string }{
		{"/exec/default/web/c?command=sh&command=-c&command=exit+3&input=1&output=1&error=1&tty=1", `exec default/web/c ["sh" "-c" "exit 3"] {Stdin:true Stdout:true Stderr:false TTY:true}`},
		{"/attach/default/web/c?output=1&error=true", `attach default/web/c {Stdin:false Stdout:true Stderr:true TTY:false}`},
		{"/portForward/default/web?port=8080,9090", `portforward default/web [8080 9090]`},
	} {
		f.asked = nil
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n", c.path)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%s: upgrade: %v %v", c.path, resp, err)
		}
		fmt.Fprint(conn, "ping")
		buf := make([]byte, 4)
		if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
			t.Errorf("%s: echo: %q %v", c.path, buf, err)
		}
		conn.Close()
		if len(f.asked) != 1 || f.asked[0] != c.want {
			t.Errorf("%s: runtime asked %q, want %q", c.path, f.asked, c.want)
		}
	}
}
