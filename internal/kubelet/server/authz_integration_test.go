package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	kubeletserver "plainkube.dev/plainkube/internal/kubelet/server"
	"plainkube.dev/plainkube/internal/pki"
	"plainkube.dev/plainkube/internal/server"
)

// TestAgentAPIAuthorization serves the agent API (without a container
// runtime) for node n1 behind the API server's SubjectAccessReviews, with
// the agent's own client a node identity: the API server's kubelet client
// (system:masters) is served, directly and through nodes/proxy; another
// node's certificate, a user without rights and a caller without identity
// are refused.
func TestAgentAPIAuthorization(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	envs := make(chan server.ComponentEnv, 1)
	s, err := server.Start(ctx, server.Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", Port: 0, InMemory: true,
		Components: []server.Component{func(ctx context.Context, env server.ComponentEnv) error { envs <- env; return nil }}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Wait() })
	env := <-envs
	ca := &pki.Bundle{CACert: env.CACert, CAKey: env.CAKey}
	adminCfg, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(adminCfg)

	// The agent's client: a node certificate, as a joined agent has.
	nodeCert, nodeKey, err := ca.IssueClientCert("system:node:n1", []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}
	agentCfg := &rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{CAData: env.CAPEM, CertData: nodeCert, KeyData: nodeKey}}
	agentClient := kubernetes.NewForConfigOrDie(agentCfg)

	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	pods := func() []corev1.Pod { return []corev1.Pod{pod} }
	h := &kubeletserver.Handler{DataDir: t.TempDir(), Pods: pods, Metrics: kubeletserver.NewMetrics("n1", pods)}

	servingCert, servingKey, err := env.IssueServingCert([]string{"n1"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(servingCert, servingKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(env.CAPEM)
	// The agent's serving certificate is the kubelet-serving CA's.
	servingPool := x509.NewCertPool()
	servingPool.AddCert(env.KubeletServingCACert)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go kubeletserver.ServeListener(ctx, ln, &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool},
		kubeletserver.NewAuth("n1", agentClient).Wrap(h), slog.Default())
	port := ln.Addr().(*net.TCPAddr).Port

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node, err = admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Through the API server (its kubelet client is in system:masters).
	body, err := admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/n1/proxy/pods").DoRaw(ctx)
	if err != nil {
		t.Fatalf("nodes/proxy/pods: %v: %s", err, body)
	}
	var list corev1.PodList
	if err := json.Unmarshal(body, &list); err != nil || list.Kind != "PodList" || len(list.Items) != 1 || list.Items[0].Name != "web" {
		t.Fatalf("pod list: %v %s", err, body)
	}
	body, err = admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/n1/proxy/metrics").DoRaw(ctx)
	if err != nil || !strings.Contains(string(body), "kubelet_running_pods 1") || !strings.Contains(string(body), `kubelet_running_containers{container_state="running"} 1`) || !strings.Contains(string(body), "go_goroutines") {
		t.Fatalf("nodes/proxy/metrics: %v: %.2000s", err, body)
	}

	// An agent serving a certificate of the cluster CA (as nodes had before
	// the kubelet-serving CA, or one a node obtained for the API server's
	// names) is not trusted by the API server's kubelet client.
	oldCert, oldKey, err := ca.IssueServingCert([]string{"n2"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	oldPair, err := tls.X509KeyPair(oldCert, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go kubeletserver.ServeListener(ctx, ln2, &tls.Config{Certificates: []tls.Certificate{oldPair}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool},
		kubeletserver.NewAuth("n2", agentClient).Wrap(h), slog.Default())
	n2 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}
	if n2, err = admin.CoreV1().Nodes().Create(ctx, n2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n2.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	n2.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(ln2.Addr().(*net.TCPAddr).Port)
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if body, err := admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/n2/proxy/pods").DoRaw(ctx); err == nil ||
		!strings.Contains(string(body), "certificate signed by unknown authority") {
		t.Fatalf("an agent with a cluster-CA serving certificate was trusted: %v: %.500s", err, body)
	}

	// Directly, with client certificates of the cluster CA.
	bearer := ""
	get := func(user string, groups []string, path string) (int, string) {
		t.Helper()
		tc := &tls.Config{RootCAs: servingPool}
		if user != "" {
			c, k, err := ca.IssueClientCert(user, groups)
			if err != nil {
				t.Fatal(err)
			}
			kp, err := tls.X509KeyPair(c, k)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{kp}
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
		req, _ := http.NewRequest("GET", "https://127.0.0.1:"+strconv.Itoa(port)+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, b := get("kube-apiserver-kubelet-client", []string{"system:masters"}, "/pods"); code != 200 || !strings.Contains(b, `"web"`) {
		t.Errorf("API server's client: %d %.300s", code, b)
	}
	if code, b := get("system:node:other", []string{"system:nodes"}, "/pods"); code != 403 ||
		b != "Forbidden (user=system:node:other, verb=get, resource=nodes, subresource(s)=[pods proxy])" {
		t.Errorf("another node: %d %q", code, b)
	}
	if code, b := get("system:node:n1", []string{"system:nodes"}, "/metrics"); code != 403 {
		t.Errorf("the node itself (upstream's system:node role has no nodes/metrics): %d %q", code, b)
	}
	if code, b := get("alice", nil, "/exec/default/web/c?command=id"); code != 403 ||
		b != "Forbidden (user=alice, verb=create, resource=nodes, subresource(s)=[proxy])" {
		t.Errorf("user without rights: %d %q", code, b)
	}
	if code, b := get("", nil, "/healthz"); code != 401 || b != "Unauthorized" {
		t.Errorf("no identity: %d %q", code, b)
	}
	// Bearer tokens are reviewed by the API server (TokenReview): the join
	// token is a bootstrap token, whose user may not call the agent.
	bearer = s.JoinToken.Token
	id, _, _ := strings.Cut(s.JoinToken.Token, ".")
	if code, b := get("", nil, "/healthz"); code != 403 ||
		b != "Forbidden (user=system:bootstrap:"+id+", verb=get, resource=nodes, subresource(s)=[healthz proxy])" {
		t.Errorf("bootstrap token: %d %q", code, b)
	}
	bearer = id + ".0123456789abcdef"
	if code, b := get("", nil, "/healthz"); code != 401 {
		t.Errorf("a wrong token: %d %q", code, b)
	}
}
