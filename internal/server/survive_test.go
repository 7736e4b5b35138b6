package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/controller/deployment"
	"plainkube.dev/plainkube/internal/controllermanager"
	"plainkube.dev/plainkube/internal/reconcile"
	"plainkube.dev/plainkube/internal/storage/etcd"
)

// TestControllerPanicIsRecovered injects a panic into the deployment
// controller for one Deployment: the server keeps serving, the controller
// goes on with another Deployment, the panic is counted in /metrics, and
// the Deployment that panicked is retried until (the fault gone) it gets
// its ReplicaSet.
func TestControllerPanicIsRecovered(t *testing.T) {
	var panics atomic.Int32
	reconcile.SetTestHook(func(loop string, key any) {
		if loop == deployment.Name && key == "default/boom" && panics.Load() < 3 {
			panics.Add(1)
			panic("injected fault")
		}
	})
	t.Cleanup(func() { reconcile.SetTestHook(nil) })
	counted := reconcile.Panics.WithLabelValues(deployment.Name)
	before := testutil.ToFloat64(counted)
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	for _, name := range []string{"boom", "web"} {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	replicaSetOf := func(name string) bool {
		list, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		return err == nil && len(list.Items) == 1
	}
	deadline := time.Now().Add(30 * time.Second)
	for !replicaSetOf("web") || panics.Load() < 3 || !replicaSetOf("boom") {
		if time.Now().After(deadline) {
			t.Fatalf("web has a ReplicaSet: %v; boom: %v after %d panics", replicaSetOf("web"), replicaSetOf("boom"), panics.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, _, body := raw(t, cfg, "GET", "/metrics", "", "", "")
	if code != 200 || !strings.Contains(body, `plainkube_recovered_panics_total{loop="deployment"}`) || testutil.ToFloat64(counted)-before != 3 {
		t.Errorf("/metrics: %d, no count of the 3 panics:\n%s", code, grepLines(body, "panics"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestEtcdOutage stops the external etcd under a server: /readyz (and
// /livez, /readyz/etcd) turn red within 5 s, a write fails with 504 at its
// deadline (never a false 2xx), and once etcd is back the server is ready
// again, serves what was stored before and takes writes.
func TestEtcdOutage(t *testing.T) {
	etcdDir := t.TempDir()
	sock := url.URL{Scheme: "unix", Path: filepath.Join(etcdDir, "client.sock")}
	startEtcd := func() *etcd.Embedded {
		t.Helper()
		e, err := etcd.StartEmbedded(filepath.Join(etcdDir, "data"), etcd.WithoutFsync(), etcd.WithClientURL(sock))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := startEtcd()
	t.Cleanup(func() { e.Close() })
	_, cfg := startServerWith(t, Options{EtcdServers: []string{e.Endpoint()}})
	cs := clientset(t, cfg)
	ctx := context.Background()
	health := func(path string) (int, string) {
		code, _, body := raw(t, cfg, "GET", path, "", "", "")
		return code, body
	}
	if code, body := health("/readyz?verbose"); code != 200 || !strings.Contains(body, "[+]etcd ok\n") ||
		!strings.Contains(body, "[+]etcd-readiness ok\n") || !strings.Contains(body, "[+]informer-sync ok\n") || !strings.HasSuffix(body, "readyz check passed\n") {
		t.Fatalf("/readyz?verbose: %d %q", code, body)
	}
	if code, body := health("/readyz?verbose&exclude=etcd"); code != 200 || !strings.Contains(body, "[+]etcd excluded: ok\n") {
		t.Errorf("/readyz?exclude=etcd: %d %q", code, body)
	}
	if code, body := health("/livez/etcd"); code != 200 || body != "ok" {
		t.Errorf("/livez/etcd: %d %q", code, body)
	}
	if code, _ := health("/readyz/no-such-check"); code != 404 {
		t.Errorf("/readyz/no-such-check: %d", code)
	}
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	e.Close()
	stopped := time.Now()
	for {
		code, body := health("/readyz")
		if code == 500 && strings.Contains(body, "[-]etcd failed: reason withheld\n") {
			break
		}
		if time.Since(stopped) > 5*time.Second {
			t.Fatalf("/readyz 5 s after etcd stopped: %d %q", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := health("/livez"); code != 500 {
		t.Errorf("/livez without etcd: %d %q", code, body)
	}
	if code, body := health("/readyz/etcd"); code != 500 || !strings.HasPrefix(body, "internal server error: ") {
		t.Errorf("/readyz/etcd without etcd: %d %q", code, body)
	}
	body, _ := json.Marshal(cm("during"))
	code, _, resp := raw(t, cfg, "POST", "/api/v1/namespaces/default/configmaps?timeout=2s", "application/json", "application/json", string(body))
	if code != 504 || !strings.Contains(resp, "request did not complete within the allotted timeout") {
		t.Errorf("a write without etcd: %d %s", code, resp)
	}

	e = startEtcd()
	restarted := time.Now()
	for {
		if code, _ := health("/readyz"); code == 200 {
			break
		}
		if time.Since(restarted) > 20*time.Second {
			code, body := health("/readyz?verbose")
			t.Fatalf("/readyz 20 s after etcd came back: %d %q", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Errorf("what was stored before the outage: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm("after"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a write once etcd is back: %v", err)
	}
}

// TestReadyzFollowsTheControllerManagersLease: /readyz checks the Lease of
// the in-process controller manager. Taken by a candidate that then
// stops renewing, /readyz fails once that Lease expires, and passes again
// when the controller manager has campaigned and leads again.
func TestReadyzFollowsTheControllerManagersLease(t *testing.T) {
	_, cfg := startServerWith(t, Options{InMemory: true, LeaderLeases: []string{"kube-controller-manager"},
		Components: []Component{func(ctx context.Context, env ComponentEnv) error {
			return controllermanager.Run(ctx, env.ConfigAs(auth.ControllerManagerUser()), controllermanager.Options{Controllers: []string{"serviceaccount"},
				ServiceAccountConfig: env.ServiceAccountConfig, LeaderElection: &reconcile.LeaderElection{Identity: "cm",
					LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}})
		}}})
	cs := clientset(t, cfg)
	ctx := context.Background()
	readyz := func() (int, string) {
		code, _, body := raw(t, cfg, "GET", "/readyz?verbose", "", "", "")
		return code, body
	}
	waitReady := func(what string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, body := readyz()
			if code == 200 && strings.Contains(body, "[+]leader/kube-controller-manager ok\n") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: /readyz %d %q", what, code, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitReady("the controller manager leading")
	leases := cs.CoordinationV1().Leases("kube-system")
	for attempt := 0; ; attempt++ {
		l, err := leases.Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = ptr.To("thief"), ptr.To[int32](1), &metav1.MicroTime{Time: time.Now()}
		if _, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err == nil {
			break
		} else if attempt == 20 {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := readyz()
		if code == 500 && strings.Contains(body, "[-]leader/kube-controller-manager failed: reason withheld\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz while the Lease's holder is gone: %d %q", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitReady("the controller manager leading again")
}

// TestFloodByOneUser: one unprivileged user floods the server with 2,000
// requests, slow (bodies that take seconds to arrive) and fast. The flood
// gets 429s; another ordinary user, the admin, and the controllers (a
// Deployment of 50 replicas) are served meanwhile.
func TestFloodByOneUser(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	for _, b := range []struct{ user, role string }{{"flood", "cluster-admin"}, {"bystander", "view"}} {
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: b.user}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	as := func(user string) *rest.Config {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: user}
		return c
	}
	floodClient, err := rest.HTTPClientFor(as("flood"))
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the flood user's binding is in force.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := clientset(t, as("flood")).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var codes sync.Map // status code -> *atomic.Int32
	count := func(code int) {
		v, _ := codes.LoadOrStore(code, new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
	}
	var flood sync.WaitGroup
	slowBody := func(i int) io.Reader {
		pr, pw := io.Pipe()
		go func() {
			time.Sleep(4 * time.Second)
			fmt.Fprintf(pw, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"slow-%d"}}`, i)
			pw.Close()
		}()
		return pr
	}
	for i := range 2000 {
		flood.Go(func() {
			var req *http.Request
			if i%4 == 0 { // 500 slow
				req, _ = http.NewRequest("POST", cfg.Host+"/api/v1/namespaces/default/configmaps?timeout=10s", slowBody(i))
				req.Header.Set("Content-Type", "application/json")
			} else {
				req, _ = http.NewRequest("GET", cfg.Host+"/api/v1/namespaces/default/configmaps", nil)
			}
			resp, err := floodClient.Do(req)
			if err != nil {
				count(-1)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			count(resp.StatusCode)
		})
	}
	time.Sleep(500 * time.Millisecond) // the slow ones hold their seats now

	served := func(who string, call func(context.Context) error) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start := time.Now()
		if err := call(cctx); err != nil {
			t.Errorf("%s during the flood: %v", who, err)
		} else if took := time.Since(start); took > 3500*time.Millisecond {
			// Before the slow requests' bodies arrive (4 s): served while
			// the flood holds its seats, not after.
			t.Errorf("%s during the flood took %v", who, took)
		}
	}
	served("the admin's list of pods", func(ctx context.Context) error {
		_, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		return err
	})
	bystander := clientset(t, as("bystander"))
	served("another user's list of ConfigMaps", func(ctx context.Context) error {
		_, err := bystander.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err
	})
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "fifty"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](50), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fifty"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "fifty"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=fifty"})
		if err == nil && len(pods.Items) == 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the controllers made %d of 50 pods during the flood (%v)", len(pods.Items), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	flood.Wait()
	got := map[int]int32{}
	codes.Range(func(k, v any) bool { got[k.(int)] = v.(*atomic.Int32).Load(); return true })
	if got[http.StatusTooManyRequests] == 0 || got[http.StatusOK] == 0 {
		t.Errorf("the flood's answers by status: %v; want some 429s and some served", got)
	}
	t.Logf("the flood's answers by status: %v", got)
}

// TestHostileBodies: bodies built to exhaust the decoder — JSON and YAML
// nested a hundred thousand deep, a YAML "billion laughs" of aliases,
// patches as deep — are refused with a 4xx quickly, and the server keeps
// serving.
func TestHostileBodies(t *testing.T) {
	_, cfg := startServer(t)
	const depth = 100000
	nestedJSON := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":` + strings.Repeat(`{"a":`, depth) + `1` + strings.Repeat(`}`, depth) + `}`
	nestedYAML := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata: " + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "\n"
	laughs := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\n  annotations:\n    a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	for i := 1; i < 10; i++ {
		laughs += fmt.Sprintf("    a%d: &a%d [*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	cs := clientset(t, cfg)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deepPatch := strings.Repeat(`{"a":`, depth) + `1` + strings.Repeat(`}`, depth)
	for _, c := range []struct{ name, method, path, contentType, body string }{
		{"nested JSON", "POST", "/api/v1/namespaces/default/configmaps", "application/json", nestedJSON},
		{"nested YAML", "POST", "/api/v1/namespaces/default/configmaps", "application/yaml", nestedYAML},
		{"YAML aliases", "POST", "/api/v1/namespaces/default/configmaps", "application/yaml", laughs},
		{"nested merge patch", "PATCH", "/api/v1/namespaces/default/configmaps/target", "application/merge-patch+json", deepPatch},
		{"nested strategic merge patch", "PATCH", "/api/v1/namespaces/default/configmaps/target", "application/strategic-merge-patch+json", deepPatch},
		{"nested apply", "PATCH", "/api/v1/namespaces/default/configmaps/target?fieldManager=x", "application/apply-patch+yaml", nestedYAML},
	} {
		start := time.Now()
		code, _, body := raw(t, cfg, c.method, c.path, c.contentType, "application/json", c.body)
		if code < 400 || code >= 500 {
			t.Errorf("%s: %d %.200s", c.name, code, body)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s took %v", c.name, took)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), "target", metav1.GetOptions{}); err != nil {
		t.Errorf("serving after the hostile bodies: %v", err)
	}
}
