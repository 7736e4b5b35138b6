package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: %d
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.example.com/web:2.1
          ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`

func TestKubectlApplyGetDescribe(t *testing.T) {
	c := startCluster(t)
	dir := t.TempDir()
	f := writeFile(t, dir, "web.yaml", fmt.Sprintf(webDeployment, 3))
	out := c.must("apply", "-f", f)
	contains(t, out, "deployment.apps/web created", "service/web created")
	// Applying a changed file patches it.
	writeFile(t, dir, "web.yaml", fmt.Sprintf(webDeployment, 5))
	out = c.must("apply", "-f", f)
	contains(t, out, "deployment.apps/web configured", "service/web unchanged")
	if got := c.must("get", "deployment", "web", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"); got != "5 2" {
		t.Fatalf("after second apply: replicas and generation %q, want \"5 2\"", got)
	}
	out = c.must("get", "deployments")
	contains(t, out, "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "web")
	out = c.must("get", "svc", "web", "-o", "wide")
	contains(t, out, "TYPE", "CLUSTER-IP", "ClusterIP", "80/TCP", "app=web")
	out = c.must("get", "svc", "-A")
	contains(t, out, "NAMESPACE", "default", "kubernetes", "web")
	c.must("get", "deploy", "web", "-o", "yaml")
	out = c.must("get", "deploy", "web", "-o", "json")
	contains(t, out, `"progressDeadlineSeconds": 600`, `"revisionHistoryLimit": 10`, `"maxSurge": "25%"`)
	out = c.must("get", "deploy,svc", "-o", "name")
	contains(t, out, "deployment.apps/web", "service/web")
	out = c.must("describe", "deployment", "web")
	contains(t, out, "Name:", "web", "Replicas:", "StrategyType:", "RollingUpdate")
	out = c.must("get", "ns")
	contains(t, out, "default", "kube-system", "kube-public", "kube-node-lease", "Active")
}

func TestKubectlCRUDVerbs(t *testing.T) {
	c := startCluster(t)
	dir := t.TempDir()
	c.must("create", "namespace", "team")
	c.must("create", "configmap", "cm", "-n", "team", "--from-literal=a=1")
	c.must("create", "secret", "generic", "s", "-n", "team", "--from-literal=password=x")
	out := c.must("get", "cm,secret", "-n", "team")
	contains(t, out, "configmap/cm", "secret/s", "Opaque")

	c.must("label", "cm", "cm", "-n", "team", "tier=backend")
	c.must("annotate", "cm", "cm", "-n", "team", "note=hello")
	out = c.must("get", "cm", "-n", "team", "-l", "tier=backend", "--show-labels")
	contains(t, out, "cm", "tier=backend")
	out = c.must("get", "cm", "-A", "--field-selector", "metadata.name=cm", "-o", "jsonpath={.items[*].metadata.annotations.note}")
	if out != "hello" {
		t.Fatalf("field selector + annotate: %q", out)
	}

	c.must("patch", "cm", "cm", "-n", "team", "--type=merge", "-p", `{"data":{"b":"2"}}`)
	c.must("patch", "cm", "cm", "-n", "team", "--type=json", "-p", `[{"op":"add","path":"/data/c","value":"3"}]`)
	c.must("patch", "cm", "cm", "-n", "team", "-p", `{"data":{"d":"4"}}`) // strategic
	out = c.must("get", "cm", "cm", "-n", "team", "-o", "jsonpath={.data}")
	contains(t, out, `"a":"1"`, `"b":"2"`, `"c":"3"`, `"d":"4"`)
	out = c.mustFail("patch", "cm", "cm", "-n", "team", "--type=json", "-p", `[{"op":"test","path":"/data/a","value":"nope"}]`)

	// edit with EDITOR set to a script.
	editor := writeFile(t, dir, "editor.sh", "#!/bin/sh\nsed -i 's/a: \"1\"/a: \"edited\"/' \"$1\"\n")
	os.Chmod(editor, 0o755)
	if out, err := c.runWith([]string{"EDITOR=" + editor, "KUBE_EDITOR=" + editor}, "", "edit", "cm", "cm", "-n", "team"); err != nil {
		t.Fatalf("edit: %v\n%s", err, out)
	}
	if got := c.must("get", "cm", "cm", "-n", "team", "-o", "jsonpath={.data.a}"); got != "edited" {
		t.Fatalf("after edit: %q", got)
	}

	// replace
	y := c.must("get", "cm", "cm", "-n", "team", "-o", "yaml")
	y = strings.Replace(y, "d: \"4\"", "d: \"replaced\"", 1)
	f := writeFile(t, dir, "cm.yaml", y)
	c.must("replace", "-f", f)
	if got := c.must("get", "cm", "cm", "-n", "team", "-o", "jsonpath={.data.d}"); got != "replaced" {
		t.Fatalf("after replace: %q", got)
	}
	// replace with the now-stale resourceVersion is a conflict.
	out = c.mustFail("replace", "-f", f)
	contains(t, out, "the object has been modified")

	// Leases and pods.
	c.must("create", "-f", writeFile(t, dir, "lease.yaml", "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l, namespace: team}\nspec: {holderIdentity: me, leaseDurationSeconds: 15}\n"))
	out = c.must("get", "lease", "-n", "team")
	contains(t, out, "HOLDER", "me")
	c.must("run", "p", "-n", "team", "--image=busybox", "--restart=Never", "--", "sleep", "3600")
	out = c.must("get", "pods", "-n", "team")
	contains(t, out, "NAME", "READY", "STATUS", "RESTARTS", "AGE", "p", "0/1", "Pending")
	out = c.must("describe", "pod", "p", "-n", "team")
	contains(t, out, "busybox", "Status:", "Pending")

	// delete waits; deleting a namespace marks it Terminating.
	c.must("delete", "cm", "cm", "-n", "team", "--wait")
	c.mustFail("get", "cm", "cm", "-n", "team")
	out = c.must("delete", "pod", "p", "-n", "team", "--wait=true")
	contains(t, out, `pod "p" deleted`)
	c.must("delete", "secret", "s", "-n", "team", "--cascade=orphan")
	c.must("delete", "lease", "l", "-n", "team", "--cascade=background")
	c.mustFail("get", "secret", "s", "-n", "team")

	// NamespaceLifecycle: the system namespaces stay.
	out = c.mustFail("delete", "namespace", "default")
	contains(t, out, `namespaces "default" is forbidden: this namespace may not be deleted`)
	contains(t, c.must("get", "namespace", "default", "-o", "jsonpath={.status.phase}"), "Active")

	out = c.mustFail("get", "cm", "nope")
	contains(t, out, `configmaps "nope" not found`)
	out = c.mustFail("create", "configmap", "Bad_Name")
	contains(t, out, "Invalid value")
}

func TestKubectlWatch(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// get -w prints a row per change.
	cmd := exec.CommandContext(ctx, c.kubectl, "get", "configmaps", "-w")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig(), "HOME="+c.dataDir)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The raw watch of get --raw shows JSON events.
	raw := exec.CommandContext(ctx, c.kubectl, "get", "--raw", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=5")
	raw.Env = cmd.Env
	rawOut := make(chan string, 1)
	go func() { b, _ := raw.CombinedOutput(); rawOut <- string(b) }()
	time.Sleep(500 * time.Millisecond)
	c.must("create", "configmap", "watched")
	deadline := time.After(20 * time.Second)
	for seen := false; !seen; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("kubectl get -w ended")
			}
			seen = strings.HasPrefix(l, "watched")
		case <-deadline:
			t.Fatal("kubectl get -w did not show the new configmap")
		}
	}
	out := <-rawOut
	contains(t, out, `"type":"ADDED"`, `"name":"watched"`)
}

// TestCrashKeepsAcknowledgedWrites kills the server with SIGKILL during a
// stream of creates; after a restart every create that got a 201 is there.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	c := startCluster(t)
	if c.must("get", "ns", "default", "-o", "name") != "namespace/default\n" {
		t.Fatal("no default namespace")
	}
	var acked sync.Map
	var n atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("crash-%d-%d", w, i)
				if _, err := c.run("create", "configmap", name); err == nil {
					acked.Store(name, true)
					n.Add(1)
				}
			}
		}(w)
	}
	deadline := time.Now().Add(20 * time.Second)
	for n.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	c.kill()
	close(stop)
	wg.Wait()
	if n.Load() == 0 {
		t.Fatal("no create succeeded before the kill")
	}
	c.start()
	out := c.must("get", "configmaps", "-o", "name")
	missing := 0
	acked.Range(func(k, _ interface{}) bool {
		if !strings.Contains(out, "configmap/"+k.(string)+"\n") {
			missing++
			t.Errorf("acknowledged create %s lost after crash", k)
		}
		return true
	})
	t.Logf("%d acknowledged creates, %d missing after kill -9 and restart", n.Load(), missing)
}
