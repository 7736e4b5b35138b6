package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
)

// fakeUpstream is a DNS server on loopback standing in for the host's
// resolvers: it answers external.example. with 192.0.2.123 and
// everything else with NXDOMAIN. It returns its address.
func fakeUpstream(t *testing.T) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &mdns.Server{PacketConn: pc, Handler: mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(r)
		if len(r.Question) == 1 && r.Question[0].Name == "external.example." && r.Question[0].Qtype == mdns.TypeA {
			rr, _ := mdns.NewRR("external.example. 60 IN A 192.0.2.123")
			m.Answer = append(m.Answer, rr)
		} else {
			m.Rcode = mdns.RcodeNameError
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String()
}

// waitPods waits up to 50 s for the pods (pod/NAME) to meet condition
// (kubectl wait's --for); if they do not, the test fails with what the
// pods and the server say.
func waitPods(t *testing.T, c *cluster, condition string, pods ...string) {
	t.Helper()
	args := append(append([]string{"wait", condition}, pods...), "--timeout=50s")
	if out, err := c.run(args...); err != nil {
		desc, _ := c.run(append([]string{"describe"}, pods...)...)
		log := c.log.String()
		if len(log) > 20000 {
			log = log[len(log)-20000:]
		}
		t.Fatalf("kubectl wait %s: %v\n%s\n%s\nserver log (end):\n%s", condition, err, out, desc, log)
	}
}

// buildNettool builds the nettool:e2e image into the node's containerd.
func buildNettool(t *testing.T, dataDir string) {
	t.Helper()
	out, err := exec.Command(binary, "image", "build", "--data-dir", dataDir, "--tag", "nettool:e2e", "--binary", nettool).CombinedOutput()
	if err != nil {
		t.Fatalf("image build: %v\n%s", err, out)
	}
}

// TestServicesAndDNS is issue #15's walk-through: a Deployment behind a
// Service answers by name from another pod, through the node's service
// proxy and DNS, and from the node at its NodePort and load-balancer
// address; affinity, selector-less Services, Services without endpoints,
// headless StatefulSets, SRV records and external names.
func TestServicesAndDNS(t *testing.T) {
	requireRealNode(t)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft (nftables) is not installed")
	}
	upstream := fakeUpstream(t)
	c := startCluster(t, "--enable-node", "--bind-address", "0.0.0.0", "--cluster-cidr", "10.120.0.0/16", "--dns-upstream", upstream)
	t.Cleanup(func() {
		c.run("delete", "deployment,statefulset,pod", "--all", "--wait=false")
		c.eventually([]string{"No resources found"}, "get", "pods")
	})
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	buildNettool(t, c.dataDir)
	buildBusybox(t, c.dataDir, "sh,sleep,nslookup")
	c.must("apply", "-f", writeFile(t, t.TempDir(), "web.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: web
        image: nettool:e2e
        imagePullPolicy: Never
        command: ["nettool", "serve", "-port", "8080"]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: web-lb}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{name: http, port: 8081, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: sticky}
spec:
  selector: {app: web}
  sessionAffinity: ClientIP
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: empty}
spec:
  selector: {app: nothing}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: nettool:e2e, imagePullPolicy: Never, command: ["nettool", "pause"]}
---
apiVersion: v1
kind: Pod
metadata: {name: shell}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox:e2e, imagePullPolicy: Never, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Service
metadata: {name: echo-udp}
spec:
  selector: {app: udp}
  ports: [{port: 9090, protocol: UDP}]
---
apiVersion: v1
kind: Pod
metadata: {name: udp-a, labels: {app: udp}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: nettool:e2e, imagePullPolicy: Never, command: ["nettool", "serve", "-udp-port", "9090"]}
---
apiVersion: v1
kind: Pod
metadata: {name: udp-b, labels: {app: spare}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: nettool:e2e, imagePullPolicy: Never, command: ["nettool", "serve", "-udp-port", "9090"]}
`))
	c.must("rollout", "status", "deployment/web", "--timeout=90s")
	waitPods(t, c, "--for=condition=Ready", "pod/client", "pod/shell", "pod/udp-a", "pod/udp-b")
	exec := func(args ...string) (string, error) {
		return c.run(append([]string{"exec", "client", "--", "nettool"}, args...)...)
	}
	// Its answers are stdout alone: kubectl's own client messages (its
	// websocket reader's, on stderr) are not part of them.
	mustExec := func(args ...string) string {
		t.Helper()
		return c.mustStdout(append([]string{"exec", "client", "--", "nettool"}, args...)...)
	}
	// By every name, and by the ClusterIP.
	clusterIP := c.must("get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")
	var names []string
	waitFor(t, 30*time.Second, "http://web answers", func() (bool, string) {
		out, err := exec("get", "http://web")
		return err == nil, out
	})
	for _, url := range []string{"http://web", "http://web.default", "http://web.default.svc.cluster.local", "http://" + clusterIP} {
		names = strings.Fields(mustExec("get", url))
		if len(names) != 1 || !strings.HasPrefix(names[0], "web-") {
			t.Fatalf("%s answered %q", url, names)
		}
	}
	// 60 requests reach all 3 replicas.
	seen := map[string]int{}
	for _, n := range strings.Fields(mustExec("get", "-n", "60", "http://web")) {
		seen[n]++
	}
	if len(seen) != 3 {
		t.Fatalf("60 requests reached %v, want the 3 replicas", seen)
	}
	// The API server, as every in-cluster client reaches it.
	mustExec("connect", "kubernetes.default.svc:443")
	// Session affinity pins the client to one replica.
	seen = map[string]int{}
	for _, n := range strings.Fields(mustExec("get", "-n", "20", "http://sticky")) {
		seen[n]++
	}
	if len(seen) != 1 {
		t.Fatalf("sessionAffinity ClientIP: reached %v, want one replica", seen)
	}
	// No endpoints: refused at once, not a hang.
	start := time.Now()
	if out, err := exec("get", "-timeout", "10s", "http://empty"); err == nil || !strings.Contains(out, "refused") {
		t.Fatalf("a Service without endpoints: %v %s", err, out)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a Service without endpoints took %s to refuse", d)
	}
	// From the node: the NodePort on loopback and at the node's address,
	// and the load balancer's address.
	nodePort := c.must("get", "svc", "web-lb", "-o", "jsonpath={.spec.ports[0].nodePort}")
	nodeIP := c.must("get", "nodes", "-o", "jsonpath={.items[0].status.addresses[?(@.type==\"InternalIP\")].address}")
	lbIP := c.eventually([]string{"."}, "get", "svc", "web-lb", "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}")
	if lbIP != nodeIP {
		t.Fatalf("load balancer ingress %q, want the node's address %q", lbIP, nodeIP)
	}
	for _, addr := range []string{"127.0.0.1:" + nodePort, nodeIP + ":" + nodePort, lbIP + ":8081"} {
		waitFor(t, 20*time.Second, "http://"+addr+" from the node", func() (bool, string) {
			resp, err := (&http.Client{Timeout: 3 * time.Second}).Get("http://" + addr)
			if err != nil {
				return false, err.Error()
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return strings.HasPrefix(string(b), "web-"), string(b)
		})
	}
	// A node port a host process holds is not taken over: the Service
	// says so in a Warning event, and the process keeps its port.
	held, err := net.Listen("tcp", ":31999")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	go http.Serve(held, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "host process") }))
	c.must("create", "service", "nodeport", "clash", "--tcp=80:8080", "--node-port=31999")
	c.eventually([]string{"FailedToProgram", "node port 31999/TCP is held by a process on the node"}, "get", "events", "--field-selector=involvedObject.name=clash")
	if resp, err := http.Get("http://" + nodeIP + ":31999"); err != nil {
		t.Fatalf("the host process's port: %v", err)
	} else if b, _ := io.ReadAll(resp.Body); string(b) != "host process" {
		t.Fatalf("the host process's port answered %q", b)
	}
	// A selector-less Service with a hand-made EndpointSlice.
	podIP := c.must("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].status.podIP}")
	c.must("apply", "-f", writeFile(t, t.TempDir(), "manual.yaml", fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: manual}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: manual-1
  labels: {kubernetes.io/service-name: manual}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints: [{addresses: ["%s"]}]
`, podIP)))
	waitFor(t, 20*time.Second, "the selector-less Service answers", func() (bool, string) {
		out, err := exec("get", "http://manual")
		return err == nil, out
	})
	// Scaling down and deleting a pod mid-stream fails no request.
	done := make(chan string, 1)
	go func() {
		out, _ := exec("get", "-n", "150", "-interval", "40ms", "-keep-going", "http://web")
		done <- out
	}()
	time.Sleep(time.Second)
	pod := strings.Fields(c.must("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}"))
	c.must("delete", "pod", pod[0], "--wait=false")
	time.Sleep(2 * time.Second)
	c.must("scale", "deployment/web", "--replicas=1")
	if out := <-done; !strings.Contains(out, "failed: 0") {
		t.Fatalf("requests while scaling down and deleting a pod:\n%s", out)
	}
	// Hairpin: the one replica left reaches itself through its Service.
	waitFor(t, 30*time.Second, "a pod reaching itself through its Service", func() (bool, string) {
		ready := strings.Fields(c.must("get", "endpointslices", "-l", "kubernetes.io/service-name=web", "-o",
			"jsonpath={.items[*].endpoints[?(@.conditions.ready==true)].targetRef.name}"))
		if len(ready) != 1 {
			return false, fmt.Sprintf("ready endpoints %v", ready)
		}
		out, err := c.run("exec", ready[0], "--", "nettool", "get", "-n", "3", "http://web")
		return err == nil && strings.Count(out, ready[0]) == 3, out
	})
	// UDP: when a Service's endpoint changes, a client that keeps sending
	// from one port moves to the new endpoint (its conntrack entry to the
	// old one is deleted), though the old pod still answers.
	waitFor(t, 20*time.Second, "the UDP Service answers", func() (bool, string) {
		out, _ := exec("udp", "echo-udp:9090")
		return strings.Contains(out, "udp-a"), out
	})
	udpDone := make(chan string, 1)
	go func() {
		out, _ := exec("udp", "-n", "50", "-interval", "200ms", "-local-port", "40000", "echo-udp:9090")
		udpDone <- out
	}()
	time.Sleep(3 * time.Second)
	c.must("label", "pod", "udp-a", "app=spare", "--overwrite")
	c.must("label", "pod", "udp-b", "app=udp", "--overwrite")
	answers := strings.Fields(<-udpDone)
	if len(answers) < 10 || answers[0] != "udp-a" || strings.Join(answers[len(answers)-10:], " ") != strings.TrimSpace(strings.Repeat("udp-b ", 10)) {
		t.Fatalf("UDP answers while the endpoint changed (want udp-a first, udp-b at the end):\n%v", answers)
	}
	// DNS: a headless StatefulSet's pod, SRV, and an external name.
	c.must("apply", "-f", writeFile(t, t.TempDir(), "sts.yaml", `apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{name: http, port: 8080}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: db, image: nettool:e2e, imagePullPolicy: Never, command: ["nettool", "serve", "-port", "8080"]}
`))
	c.must("rollout", "status", "statefulset/db", "--timeout=90s")
	dbIP := c.must("get", "pod", "db-0", "-o", "jsonpath={.status.podIP}")
	waitFor(t, 20*time.Second, "nslookup of the StatefulSet's pod", func() (bool, string) {
		out, _ := c.run("exec", "shell", "--", "nslookup", "db-0.db.default.svc.cluster.local")
		return strings.Contains(out, dbIP), out
	})
	if out := mustExec("lookup", "-type", "SRV", "_http._tcp.web.default.svc.cluster.local"); !strings.Contains(out, "web.default.svc.cluster.local. 80") {
		t.Fatalf("SRV: %s", out)
	}
	if out, _ := c.run("exec", "shell", "--", "nslookup", "external.example"); !strings.Contains(out, "192.0.2.123") {
		t.Fatalf("nslookup of an external name (the forwarder):\n%s", out)
	}
	// A restart of the server and its node keeps an established
	// connection through a Service, and new connections work again once
	// the node is back.
	c.must("apply", "-f", writeFile(t, t.TempDir(), "held.yaml", `apiVersion: v1
kind: Pod
metadata: {name: held}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: nettool:e2e, imagePullPolicy: Never, command: ["nettool", "get", "-keep-alive", "-keep-going", "-n", "100", "-interval", "200ms", "http://web"]}
`))
	waitPods(t, c, "--for=jsonpath={.status.phase}=Running", "pod/held")
	time.Sleep(2 * time.Second)
	c.restart()
	restarted := time.Now()
	waitFor(t, 30*time.Second, "a new connection to the Service after the restart", func() (bool, string) {
		out, err := exec("get", "http://web")
		return err == nil, out
	})
	t.Logf("a new connection worked %s after the API server was back", time.Since(restarted).Round(100*time.Millisecond))
	waitPods(t, c, "--for=jsonpath={.status.phase}=Succeeded", "pod/held")
	if out := c.must("logs", "held"); !strings.Contains(out, "failed: 0") {
		t.Fatalf("requests on a connection held across the restart:\n%s", out)
	}
	// The proxy's metrics, on the agent's /metrics.
	node := c.must("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}")
	metrics := c.must("get", "--raw", "/api/v1/nodes/"+node+"/proxy/metrics")
	contains(t, metrics, "kubeproxy_sync_proxy_rules_duration_seconds", "kubeproxy_network_programming_duration_seconds")
}
