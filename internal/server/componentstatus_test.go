package server

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/controllermanager"
	"plainkube.dev/plainkube/internal/reconcile"
	"plainkube.dev/plainkube/internal/scheduler"
)

// componentCondition waits (up to 30 s) until the named component's
// Healthy condition has status want, and returns it.
func componentCondition(t *testing.T, get func() (*corev1.ComponentStatus, error), want corev1.ConditionStatus) corev1.ComponentCondition { //nolint:staticcheck // still served
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cs, err := get()
		if err != nil {
			t.Fatal(err)
		}
		if len(cs.Conditions) != 1 || cs.Conditions[0].Type != corev1.ComponentHealthy {
			t.Fatalf("%s: conditions %+v", cs.Name, cs.Conditions)
		}
		if c := cs.Conditions[0]; c.Status == want || time.Now().After(deadline) {
			if c.Status != want {
				t.Fatalf("%s: %+v, want status %s", cs.Name, c, want)
			}
			return c
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestComponentStatuses: /api/v1/componentstatuses answers from the
// components themselves: etcd-0 from the embedded etcd, the controller
// manager and the scheduler from the leader Leases they renew (unhealthy,
// with the reason, while the scheduler does not run); get and list only;
// `kubectl get cs` prints upstream's columns.
func TestComponentStatuses(t *testing.T) {
	envs := make(chan ComponentEnv, 1)
	s, cfg := startServerWith(t, Options{ // over an embedded etcd
		Components: []Component{func(ctx context.Context, env ComponentEnv) error {
			envs <- env
			return controllermanager.Run(ctx, env.ConfigAs(auth.ControllerManagerUser()), controllermanager.Options{RootCA: env.CAPEM,
				LeaderElection: &reconcile.LeaderElection{}, ServiceAccountConfig: env.ServiceAccountConfig, Controllers: []string{"serviceaccount"}})
		}}})
	env := <-envs
	cs := clientset(t, cfg)
	ctx := context.Background()
	statuses := cs.CoreV1().ComponentStatuses()                        //nolint:staticcheck // still served
	get := func(name string) func() (*corev1.ComponentStatus, error) { //nolint:staticcheck // still served
		return func() (*corev1.ComponentStatus, error) { return statuses.Get(ctx, name, metav1.GetOptions{}) } //nolint:staticcheck // still served
	}

	if c := componentCondition(t, get("etcd-0"), corev1.ConditionTrue); c.Message != "ok" || c.Error != "" {
		t.Errorf("etcd-0: %+v", c)
	}
	componentCondition(t, get("controller-manager"), corev1.ConditionTrue)
	c := componentCondition(t, get("scheduler"), corev1.ConditionFalse)
	if c.Error != "no leader: Lease kube-system/kube-scheduler not found" {
		t.Errorf("scheduler not running: %+v", c)
	}

	// As plainkube server runs it: in-process, leader-elected, on the
	// process's shared informers.
	sched, err := scheduler.New(env.ConfigAs(auth.SchedulerUser()), scheduler.Options{LeaderElection: &scheduler.LeaderElection{}, Informers: env.Informers})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := sched.Run(sctx); err != nil {
			t.Errorf("scheduler: %v", err)
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	if c := componentCondition(t, get("scheduler"), corev1.ConditionTrue); c.Message != "ok" {
		t.Errorf("scheduler running: %+v", c)
	}

	list, err := statuses.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, item := range list.Items {
		names = append(names, item.Name)
	}
	if strings.Join(names, ",") != "controller-manager,etcd-0,scheduler" {
		t.Errorf("componentstatuses: %v", names)
	}
	if list, err := statuses.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=etcd-0"}); err != nil || len(list.Items) != 1 {
		t.Errorf("field selector: %v, %v", list, err)
	}
	if _, err := statuses.Get(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("an unknown component: %v, want 404", err)
	}
	if _, err := statuses.Watch(ctx, metav1.ListOptions{}); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("watch: %v, want 405", err)
	}
	if err := statuses.Delete(ctx, "etcd-0", metav1.DeleteOptions{}); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("delete: %v, want 405", err)
	}

	code, _, body := raw(t, cfg, "GET", "/api/v1/componentstatuses", "", "application/json;as=Table;v=v1;g=meta.k8s.io", "")
	var table metav1.Table
	if err := json.Unmarshal([]byte(body), &table); code != 200 || err != nil {
		t.Fatalf("table: %d %s", code, body)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Name,Status,Message,Error" || len(table.Rows) != 3 || table.Rows[1].Cells[0] != "etcd-0" || table.Rows[1].Cells[1] != "Healthy" {
		t.Errorf("table: %s", body)
	}

	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl on PATH")
	}
	out, err := exec.Command(kubectl, "--kubeconfig", s.KubeconfigPath, "get", "cs").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get cs: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := [][]string{{"Warning:", "v1", "ComponentStatus", "is", "deprecated", "in", "v1.19+"}, {"NAME", "STATUS", "MESSAGE", "ERROR"}, {"controller-manager", "Healthy", "ok"}, {"etcd-0", "Healthy", "ok"}, {"scheduler", "Healthy", "ok"}}
	if len(lines) != len(want) {
		t.Fatalf("kubectl get cs:\n%s", out)
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("kubectl get cs line %d: %q, want %q", i, lines[i], strings.Join(w, " "))
		}
	}
}
