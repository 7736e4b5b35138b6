package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// TestRealNodeStreams drives exec, attach, cp, port-forward and the proxy
// subresources with the real kubectl (1.32 and 1.33, WebSockets and SPDY)
// through the API server to the node agent and containerd (root only).
// One server and one set of pods serve every subtest.
func TestRealNodeStreams(t *testing.T) {
	requireRealNode(t)
	c := startCluster(t, "--enable-node", "--cluster-cidr", "10.45.0.0/16")
	t.Cleanup(func() {
		c.run("delete", "pod", "--all", "--wait=false", "--grace-period=0")
		c.eventually([]string{"No resources found"}, "get", "pods")
	})
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	buildBusybox(t, c.dataDir, "sh,echo,sleep,httpd,mkdir,tar,cat,stty,tty")
	c.must("apply", "-f", writeFile(t, t.TempDir(), "pods.yaml", `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "mkdir -p /www && echo hello-web > /www/index.html && httpd -f -p 8080 -h /www"]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: echoer}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    stdin: true
    command: ["sh", "-c", "while read l; do echo got-$l; done"]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
`))
	c.must("wait", "--for=condition=Ready", "pod/web", "pod/echoer", "--timeout=90s")

	kubectls := []string{c.kubectl}
	if p := "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"; fileExists(p) {
		kubectls = append(kubectls, p)
	}
	if p := "/usr/lib/google-cloud-sdk/bin/kubectl.1.32"; fileExists(p) && !strings.HasPrefix(clientVersion(t, c.kubectl), "v1.32.") {
		kubectls = append(kubectls, p)
	}
	for _, kubectl := range kubectls {
		for _, websockets := range []bool{true, false} {
			var env []string
			if !websockets {
				env = []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}
			}
			k := &kubectlRun{c: c, bin: kubectl, env: env, websockets: websockets}
			name := clientVersion(t, kubectl) + "/websockets"
			if !websockets {
				name = clientVersion(t, kubectl) + "/spdy"
			}
			t.Run(name, func(t *testing.T) { testStreamsWith(t, k) })
		}
	}
	t.Run("proxy", func(t *testing.T) {
		node := strings.TrimPrefix(strings.TrimSpace(c.must("get", "nodes", "-o", "name")), "node/")
		if out := c.must("get", "--raw", "/api/v1/nodes/"+node+"/proxy/healthz"); out != "ok" {
			t.Errorf("nodes/proxy/healthz: %q", out)
		}
		// The agent's /pods and /metrics, as upstream's kubelet serves them.
		var pods corev1.PodList
		if err := json.Unmarshal([]byte(c.must("get", "--raw", "/api/v1/nodes/"+node+"/proxy/pods")), &pods); err != nil || pods.Kind != "PodList" {
			t.Errorf("nodes/proxy/pods: %v %+v", err, pods.TypeMeta)
		}
		names := map[string]bool{}
		for _, p := range pods.Items {
			names[p.Namespace+"/"+p.Name] = true
		}
		if !names["default/web"] || !names["default/echoer"] {
			t.Errorf("nodes/proxy/pods lacks default/web or default/echoer: %v", names)
		}
		contains(t, c.must("get", "--raw", "/api/v1/nodes/"+node+"/proxy/metrics"),
			"kubelet_running_pods ", `kubelet_running_containers{container_state="running"}`, "kubelet_pod_start_duration_seconds_bucket", "process_resident_memory_bytes")
		contains(t, c.eventually([]string{"pod_memory_working_set_bytes"}, "get", "--raw", "/api/v1/nodes/"+node+"/proxy/metrics/resource"),
			"node_cpu_usage_seconds_total", "scrape_error 0")
		empty := writeFile(t, t.TempDir(), "empty", "")
		if out := c.must("create", "--raw", "/api/v1/nodes/"+node+"/proxy/run/default/web/web?cmd=cat+/www/index.html", "-f", empty); out != "hello-web\n" {
			t.Errorf("nodes/proxy/run: %q", out)
		}
		for _, p := range []string{"pods/web:8080/proxy/", "pods/http:web:8080/proxy/index.html", "pods/web/proxy/"} {
			if out := c.must("get", "--raw", "/api/v1/namespaces/default/"+p); out != "hello-web\n" {
				t.Errorf("%s: %q", p, out)
			}
		}
		for _, p := range []string{"services/web:http/proxy/", "services/http:web:80/proxy/index.html"} {
			out := c.eventually([]string{"hello-web"}, "get", "--raw", "/api/v1/namespaces/default/"+p)
			if out != "hello-web\n" {
				t.Errorf("%s: %q", p, out)
			}
		}
		out := c.mustFail("get", "--raw", "/api/v1/namespaces/default/pods/nope/proxy/")
		contains(t, out, "NotFound")
	})
	t.Run("errors", func(t *testing.T) {
		contains(t, c.mustFail("exec", "web", "-c", "nope", "--", "true"), "container nope is not valid for pod web")
		contains(t, c.mustFail("get", "--raw", "/api/v1/namespaces/default/pods/web/exec?stdout=1"), "you must specify at least 1 command")
	})
	t.Run("tty", func(t *testing.T) { testTTY(t, c) })
	t.Run("v4.channel.k8s.io", func(t *testing.T) { testOldWebSocketProtocol(t, c) })
	t.Run("port-forward SPDY over WebSockets", func(t *testing.T) { testTunnelledPortForward(t, c) })
}

type kubectlRun struct {
	c          *cluster
	bin        string
	env        []string
	websockets bool
}

// run runs kubectl with stdin and returns its combined output and exit code.
func (k *kubectlRun) run(stdin io.Reader, args ...string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+k.c.kubeconfig(), "HOME="+k.c.dataDir), k.env...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return string(out), exitErr.ExitCode()
	}
	if err != nil {
		return string(out) + err.Error(), -1
	}
	return string(out), 0
}

// slowEOF yields its text, then EOF only after a pause, so that kubectl
// keeps the session open long enough to see the answer.
type slowEOF struct {
	r    io.Reader
	wait time.Duration
}

func (s *slowEOF) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		time.Sleep(s.wait)
	}
	return n, err
}

func testStreamsWith(t *testing.T, k *kubectlRun) {
	t.Run("exec exit code", func(t *testing.T) {
		out, code := k.run(nil, "exec", "web", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
		if code != 3 || !strings.Contains(out, "out") || !strings.Contains(out, "err") {
			t.Errorf("exit %d, output %q; want 3 with out and err", code, out)
		}
	})
	if k.websockets {
		// kubectl falls back to SPDY quietly when a WebSocket upgrade
		// fails; at -v=4 it says so.
		t.Run("exec without SPDY fallback", func(t *testing.T) {
			out, code := k.run(nil, "exec", "-v=4", "web", "--", "sh", "-c", "true")
			if code != 0 || strings.Contains(strings.ToLower(out), "fallback") {
				t.Errorf("exit %d, output %q", code, out)
			}
		})
	}
	t.Run("exec stdin", func(t *testing.T) {
		out, code := k.run(strings.NewReader("line one\nline two\n"), "exec", "-i", "web", "--", "cat")
		if code != 0 || out != "line one\nline two\n" {
			t.Errorf("exit %d, output %q", code, out)
		}
	})
	t.Run("exec -it", func(t *testing.T) {
		script, err := exec.LookPath("script")
		if err != nil {
			t.Skip("script (util-linux) is not installed")
		}
		// script gives kubectl a terminal; -e passes the exit code on.
		line := k.bin + " exec -it web -- sh -c 'tty; exit 4'"
		sk := &kubectlRun{c: k.c, bin: script, env: k.env}
		out, code := sk.run(nil, "-qec", line, "/dev/null")
		if code != 4 || !strings.Contains(out, "/dev/pts/") {
			t.Errorf("exit %d, output %q; want 4 and a pts", code, out)
		}
	})
	t.Run("attach", func(t *testing.T) {
		word := "w" + strconv.FormatInt(time.Now().UnixNano(), 36)
		out, code := k.run(&slowEOF{r: strings.NewReader(word + "\n"), wait: 1500 * time.Millisecond}, "attach", "-i", "echoer")
		if code != 0 || !strings.Contains(out, "got-"+word) {
			t.Errorf("exit %d, output %q; want got-%s", code, out, word)
		}
	})
	t.Run("cp", func(t *testing.T) {
		dir := t.TempDir()
		src := writeFile(t, dir, "up.txt", "uploaded "+k.bin+"\n")
		if out, code := k.run(nil, "cp", src, "web:/tmp/up.txt"); code != 0 {
			t.Fatalf("cp to pod: %d %s", code, out)
		}
		if out, _ := k.run(nil, "exec", "web", "--", "cat", "/tmp/up.txt"); out != "uploaded "+k.bin+"\n" {
			t.Errorf("file in pod: %q", out)
		}
		dst := filepath.Join(dir, "down.html")
		if out, code := k.run(nil, "cp", "web:/www/index.html", dst); code != 0 {
			t.Fatalf("cp from pod: %d %s", code, out)
		}
		if b, _ := os.ReadFile(dst); string(b) != "hello-web\n" {
			t.Errorf("copied from pod: %q", b)
		}
	})
	t.Run("port-forward", func(t *testing.T) {
		port := strconv.Itoa(freePort(t))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, k.bin, "port-forward", "-v=4", "pod/web", port+":8080")
		cmd.Env = append(append(os.Environ(), "KUBECONFIG="+k.c.kubeconfig(), "HOME="+k.c.dataDir), k.env...)
		stdout, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); cmd.Wait() }()
		lines := bufio.NewScanner(stdout)
		if !lines.Scan() || !strings.Contains(lines.Text(), "Forwarding from") {
			t.Fatalf("port-forward said %q; stderr %s", lines.Text(), stderr.String())
		}
		go io.Copy(io.Discard, stdout)
		for i := 0; i < 3; i++ { // several connections over one forward
			resp, err := http.Get("http://127.0.0.1:" + port + "/")
			if err != nil {
				t.Fatalf("GET through the forward: %v; stderr %s", err, stderr.String())
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "hello-web\n" {
				t.Errorf("GET through the forward: %q", body)
			}
		}
		cancel()
		cmd.Wait()
		if k.websockets && strings.Contains(strings.ToLower(stderr.String()), "fallback") {
			t.Errorf("port-forward fell back to SPDY: %s", stderr.String())
		}
	})
}

// testTTY runs a terminal session from client-go (as kubectl exec -it
// does) over WebSockets and over SPDY: the terminal's size, and a resize
// during the session, reach the container; the exit code comes back.
func testTTY(t *testing.T, c *cluster) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("web").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: []string{"sh", "-c", "tty; sleep 0.5; stty size; sleep 1.3; stty size; exit 5"}, Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]remotecommand.Executor{"websocket": ws, "spdy": spdy} {
		t.Run(name, func(t *testing.T) {
			sizes := &sizeQueue{sizes: []remotecommand.TerminalSize{{Width: 91, Height: 27}, {Width: 120, Height: 40}}, gap: time.Second}
			var out bytes.Buffer
			pr, pw := io.Pipe()
			defer pw.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: pr, Stdout: &out, Tty: true, TerminalSizeQueue: sizes})
			var exit utilexec.CodeExitError
			if !errors.As(err, &exit) || exit.Code != 5 {
				t.Errorf("err %v, want exit code 5", err)
			}
			got := strings.ReplaceAll(out.String(), "\r", "")
			if !strings.Contains(got, "/dev/pts/") || !strings.Contains(got, "27 91\n") || !strings.Contains(got, "40 120\n") {
				t.Errorf("terminal output %q: want a pts, 27 91, then 40 120", got)
			}
		})
	}
}

// sizeQueue hands out its sizes gap apart, then blocks until closed.
type sizeQueue struct {
	mu    sync.Mutex
	sizes []remotecommand.TerminalSize
	gap   time.Duration
	n     int
}

func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n >= len(q.sizes) {
		time.Sleep(30 * time.Second)
		return nil
	}
	if q.n > 0 {
		time.Sleep(q.gap)
	}
	s := q.sizes[q.n]
	q.n++
	return &s
}

// testOldWebSocketProtocol runs exec over WebSockets with the pre-v5
// channel protocol, which the API server passes through to the runtime.
func testOldWebSocketProtocol(t *testing.T, c *cluster) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("web").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: []string{"sh", "-c", "echo v4-out; echo v4-err >&2; exit 6"}, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	e, err := remotecommand.NewWebSocketExecutorForProtocols(cfg, "GET", req.URL().String(), "v4.channel.k8s.io")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	var exit utilexec.CodeExitError
	if !errors.As(err, &exit) || exit.Code != 6 {
		t.Errorf("err %v, want exit code 6", err)
	}
	if stdout.String() != "v4-out\n" || stderr.String() != "v4-err\n" {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

// testTunnelledPortForward forwards a port with client-go's WebSocket
// tunnelling dialer alone (kubectl falls back to SPDY when it fails, so
// its own runs cannot tell).
func testTunnelledPortForward(t *testing.T, c *cluster) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("web").SubResource("portforward").URL()
	dialer, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	var errOut bytes.Buffer
	pf, err := portforward.New(dialer, []string{"0:8080"}, stop, ready, io.Discard, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	defer func() { close(stop); <-done }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port forwarding ended: %v %s", err, errOut.String())
	case <-time.After(15 * time.Second):
		t.Fatal("port forwarding did not become ready")
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("ports %v %v", ports, err)
	}
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(int(ports[0].Local)) + "/")
	if err != nil {
		t.Fatalf("GET through the tunnel: %v %s", err, errOut.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello-web\n" {
		t.Errorf("GET through the tunnel: %q", body)
	}
}

// clientVersion is the version a kubectl binary reports, e.g. v1.33.1.
func clientVersion(t *testing.T, kubectl string) string {
	out, err := exec.Command(kubectl, "version", "--client").Output()
	if err != nil {
		t.Fatalf("%s version: %v", kubectl, err)
	}
	f := strings.Fields(strings.SplitN(string(out), "\n", 2)[0]) // "Client Version: v1.33.1"
	v := f[len(f)-1]
	if i := strings.IndexAny(v, "-+"); i > 0 {
		v = v[:i]
	}
	return v
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
