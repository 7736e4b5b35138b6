package apiserver

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

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry/all"
	"plainkube.dev/plainkube/internal/storage/memory"
)

// fakeAgent is a node agent API: upgrade requests get 101 and an echo of
// what the client writes; others get "agent <path>". Every request's
// URL is sent on seen.
func fakeAgent(t *testing.T) (*httptest.Server, chan string) {
	seen := make(chan string, 16)
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.URL.RequestURI()
		if r.Header.Get("Upgrade") == "" {
			fmt.Fprintf(w, "agent %s", r.URL.Path)
			if a := r.Header.Get("Authorization"); a != "" {
				fmt.Fprintf(w, " (the client's credentials reached the agent: %s)", a)
			}
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", r.Header.Get("Upgrade"))
		io.Copy(conn, buf)
	}))
	t.Cleanup(ts.Close)
	return ts, seen
}

func TestPodStreamsAndProxies(t *testing.T) {
	agent, seen := fakeAgent(t)
	agentURL, _ := url.Parse(agent.URL)
	_, agentPort, _ := net.SplitHostPort(agentURL.Host)
	_, h := startTestServer(t, Config{Storage: memory.New(memory.Options{}), Resources: all.Resources(), KubeletClient: agent.Client(), Logger: discardLogger()})
	api := httptest.NewServer(h)
	defer api.Close()
	for _, c := range []struct{ path, body string }{
		{"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`},
		{"/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"real"},"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":` + agentPort + `}}}}`},
		{"/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"sim","labels":{"plainkube.dev/simulated":"true"}},"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.9"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}}}}`},
		{"/api/v1/namespaces/default/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":"real","containers":[{"name":"c","image":"i"}]}}`},
		{"/api/v1/namespaces/default/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"two"},"spec":{"nodeName":"real","containers":[{"name":"a","image":"i"},{"name":"b","image":"i"}]}}`},
		{"/api/v1/namespaces/default/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"simpod"},"spec":{"nodeName":"sim","containers":[{"name":"c","image":"i"}]}}`},
		{"/api/v1/namespaces/default/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pending"},"spec":{"containers":[{"name":"c","image":"i"}]}}`},
		{"/api/v1/namespaces/default/services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"ports":[{"name":"http","port":80}]}}`},
	} {
		if rec := do(h, "POST", c.path, "application/json", "", c.body); rec.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", c.path, rec.Code, rec.Body)
		}
	}
	// The node's status may be dropped on create; set it as an agent would.
	do(h, "PATCH", "/api/v1/nodes/real/status", "application/merge-patch+json", "", `{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":`+agentPort+`}}}}`)

	pods := "/api/v1/namespaces/default/pods/"
	cases := []struct {
		method, path string
		code         int
		msg          string
	}{
		{"POST", pods + "p/exec?stdout=true", 400, "you must specify at least 1 command"},
		{"POST", pods + "p/exec?command=ls&stdout=false&stderr=false", 400, "you must specify at least 1 of stdin, stdout, stderr"},
		{"POST", pods + "p/exec?command=ls&container=nope", 400, "container nope is not valid for pod p"},
		{"POST", pods + "two/exec?command=ls", 400, "a container name must be specified for pod two, choose one of: [a b]"},
		{"POST", pods + "simpod/exec?command=ls", 400, "simulated"},
		{"POST", pods + "simpod/attach", 400, "simulated"},
		{"POST", pods + "pending/exec?command=ls", 400, "pod pending does not have a host assigned"},
		{"POST", pods + "missing/exec?command=ls", 404, `\"missing\" not found`},
		{"PUT", pods + "p/exec?command=ls", 405, ""},
		{"POST", pods + "p/portforward?ports=http", 400, "invalid port"},
		{"POST", pods + "p/exec?command=ls", 400, "Upgrade request required"},
		{"GET", "/api/v1/nodes/sim/proxy/healthz", 400, "simulated"},
		{"GET", pods + "simpod/proxy/", 400, "simulated"},
		{"GET", pods + "p/proxy/", 400, "address not allowed"},
		{"GET", "/api/v1/namespaces/default/services/svc/proxy/", 503, `no endpoints available for service \"svc\"`},
		{"GET", "/api/v1/namespaces/default/services/svc:nope/proxy/", 503, `no service port \"nope\" found for service \"svc\"`},
		{"GET", "/api/v1/nodes/real/proxy/healthz", 200, "agent /healthz"},
		{"GET", "/api/v1/nodes/real:" + agentPort + "/proxy/x/", 200, "agent /x/"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, api.URL+c.path, nil)
		req.Header.Set("Accept", "text/html") // a browser's: proxies must not negotiate
		req.Header.Set("Authorization", "Bearer the-clients-own")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.msg) || strings.Contains(string(body), "credentials reached") {
			t.Errorf("%s %s: %d %s, want %d %q", c.method, c.path, resp.StatusCode, body, c.code, c.msg)
		}
	}
	drain := func() {
		for {
			select {
			case <-seen:
			default:
				return
			}
		}
	}
	drain()

	// An upgrade reaches the agent's /exec with upstream's parameters, and
	// the connection is spliced through.
	conn, err := net.Dial("tcp", strings.TrimPrefix(api.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST %sp/exec?command=ls&command=-l&stdin=true&tty=1 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n", pods)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	if got, want := <-seen, "/exec/default/p/c?command=ls&command=-l&error=1&input=1&output=1&tty=1"; got != want {
		t.Errorf("agent saw %s, want %s", got, want)
	}
	fmt.Fprint(conn, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Errorf("echo through the upgraded connection: %q %v", buf, err)
	}
}

// getOnly allows get on everything and nothing else.
type getOnly struct{}

func (getOnly) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	if a.Verb == "get" {
		return auth.Allow, "", nil
	}
	return auth.NoOpinion, "", nil
}

// TestWebSocketExecNeedsCreate: a GET (WebSocket) exec, attach or port
// forward needs create on the subresource as well, as upstream.
func TestWebSocketExecNeedsCreate(t *testing.T) {
	s, err := New(Config{Storage: memory.New(memory.Options{}), Resources: all.Resources(), Authorizer: getOnly{}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	<-s.Ready()
	user := &auth.User{Name: "viewer"}
	for _, sub := range []string{"exec?command=ls", "attach", "portforward"} {
		req := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods/p/"+sub, nil)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req.WithContext(auth.WithUser(req.Context(), user)))
		name, _, _ := strings.Cut(sub, "?")
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `cannot create resource \"pods/`+name+`\"`) {
			t.Errorf("GET %s: %d %s", sub, rec.Code, rec.Body)
		}
	}
}
