package nodelifecycle

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

// kubelet stands in for a node's kubelet: it registers the node Ready,
// creates its lease and, while beating, renews the lease.
type kubelet struct {
	t    *testing.T
	cs   kubernetes.Interface
	name string

	mu      sync.Mutex
	beating bool
}

func startKubelet(t *testing.T, ctx context.Context, cs kubernetes.Interface, name string) *kubelet {
	t.Helper()
	k := &kubelet{t: t, cs: cs, name: name, beating: true}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k.postReady(ctx, corev1.ConditionTrue)
	now := metav1.NewMicroTime(time.Now())
	holder, secs := name, int32(40)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now}}
	if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			k.mu.Lock()
			beating := k.beating
			k.mu.Unlock()
			if !beating {
				continue
			}
			l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			now := metav1.NewMicroTime(time.Now())
			l.Spec.RenewTime = &now
			_, _ = cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{})
		}
	}()
	return k
}

func (k *kubelet) setBeating(b bool) {
	k.mu.Lock()
	k.beating = b
	k.mu.Unlock()
}

// postReady writes the node's Ready condition with a fresh heartbeat.
func (k *kubelet) postReady(ctx context.Context, status corev1.ConditionStatus) {
	k.t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := k.cs.CoreV1().Nodes().Get(ctx, k.name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		now := metav1.Now()
		cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: status, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}
		n.Status.Conditions = slices.DeleteFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady })
		n.Status.Conditions = append(n.Status.Conditions, cond)
		_, err = k.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		k.t.Fatalf("posting status of %s: %v", k.name, err)
	}
}

func runPod(t *testing.T, cs kubernetes.Interface, name, node string, tolerations ...corev1.Toleration) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: tolerations,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func getPod(t *testing.T, cs kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func nodeTaints(cs kubernetes.Interface, name string) []string {
	n, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, t := range n.Spec.Taints {
		s := t.Key + ":" + string(t.Effect)
		if t.Effect == corev1.TaintEffectNoExecute && t.TimeAdded == nil {
			s += "(no timeAdded)"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func waitTaints(t *testing.T, cs kubernetes.Interface, node string, want ...string) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got = nodeTaints(cs, node)
		return slices.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("taints of %s: %v, want %v", node, got, want)
	}
}

// newController starts a control plane and makes the controller, with
// grace period grace, for the test to run (controllertest.Run) once its
// nodes and pods are in place. ctx, for the kubelets, ends with the test.
func newController(t *testing.T, grace time.Duration) (context.Context, kubernetes.Interface, *Controller) {
	t.Helper()
	cfg := controllertest.StartServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	c.GracePeriod = grace
	c.EvictionQPS = 50
	return ctx, controllertest.Clientset(t, cfg), c
}

func TestNodeLifecycle(t *testing.T) {
	ctx, cs, c := newController(t, 600*time.Millisecond)

	// Two nodes, so that one going silent is not a full disruption.
	dying := startKubelet(t, ctx, cs, "dying")
	steady := startKubelet(t, ctx, cs, "steady")
	secs := int64(1)
	runPod(t, cs, "plain", "dying")
	runPod(t, cs, "brief", "dying", corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs})
	runPod(t, cs, "patient", "dying", corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute})
	runPod(t, cs, "elsewhere", "steady")
	controllertest.Run(t, c, 2)

	// Healthy nodes stay untainted past the grace period.
	time.Sleep(900 * time.Millisecond)
	if got := nodeTaints(cs, "dying"); len(got) != 0 {
		t.Fatalf("healthy node tainted: %v", got)
	}

	// The lease stops: after the grace period the node is Unknown and
	// tainted unreachable; the pod that does not tolerate it is evicted at
	// once, the one tolerating it for 1 s later, the one tolerating it
	// forever stays but is marked not ready.
	dying.setBeating(false)
	silentAt := time.Now()
	waitTaints(t, cs, "dying", "node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule")
	// (the last renewal may be a tick or two before silentAt)
	if d := time.Since(silentAt); d < 250*time.Millisecond {
		t.Errorf("tainted %v after the lease stopped, before the grace period", d)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, "dying", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := readyCondition(n); r == nil || r.Status != corev1.ConditionUnknown || r.Reason != "NodeStatusUnknown" || r.Message != "Kubelet stopped posting node status." {
		t.Errorf("ready condition %+v", r)
	}
	for _, typ := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		if c := getCondition(n.Status.Conditions, typ); c == nil || c.Status != corev1.ConditionUnknown {
			t.Errorf("%s: %+v", typ, c)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return getPod(t, cs, "plain").DeletionTimestamp != nil, nil
	})
	if err != nil {
		t.Fatal("untolerating pod not evicted")
	}
	plain := getPod(t, cs, "plain")
	if c := podCondition(plain, corev1.DisruptionTarget); c == nil || c.Reason != "DeletionByTaintManager" {
		t.Errorf("evicted pod conditions %+v", plain.Status.Conditions)
	}
	if getPod(t, cs, "brief").DeletionTimestamp != nil {
		t.Error("pod tolerating the taint for 1 s evicted at once")
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return getPod(t, cs, "brief").DeletionTimestamp != nil, nil
	})
	if err != nil {
		t.Fatal("pod tolerating the taint for 1 s never evicted")
	}
	patient := getPod(t, cs, "patient")
	if patient.DeletionTimestamp != nil {
		t.Error("pod tolerating the taint forever evicted")
	}
	if c := podCondition(patient, corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("pod on the silent node still ready: %+v", patient.Status.Conditions)
	}
	elsewhere := getPod(t, cs, "elsewhere")
	if elsewhere.DeletionTimestamp != nil || podCondition(elsewhere, corev1.PodReady).Status != corev1.ConditionTrue {
		t.Errorf("pod on the healthy node touched: %+v", elsewhere.Status)
	}
	if got := nodeTaints(cs, "steady"); len(got) != 0 {
		t.Errorf("healthy node tainted: %v", got)
	}

	// The node comes back: fresh lease and Ready; the taints go.
	dying.setBeating(true)
	dying.postReady(ctx, corev1.ConditionTrue)
	waitTaints(t, cs, "dying")

	// A node that reports NotReady gets the not-ready taints, and its
	// pods are marked not ready once.
	steady.postReady(ctx, corev1.ConditionFalse)
	waitTaints(t, cs, "steady", "node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule")
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return getPod(t, cs, "elsewhere").DeletionTimestamp != nil, nil
	})
	if err != nil {
		t.Error("untolerating pod on the not-ready node not evicted")
	}
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestFullDisruption: when every node goes silent, they are marked
// Unknown but not given NoExecute taints, and no pod is evicted.
func TestFullDisruption(t *testing.T) {
	ctx, cs, c := newController(t, 500*time.Millisecond)
	only := startKubelet(t, ctx, cs, "only")
	runPod(t, cs, "plain", "only")
	controllertest.Run(t, c, 2)
	only.setBeating(false)
	waitTaints(t, cs, "only", "node.kubernetes.io/unreachable:NoSchedule")
	time.Sleep(500 * time.Millisecond)
	if got := nodeTaints(cs, "only"); !slices.Equal(got, []string{"node.kubernetes.io/unreachable:NoSchedule"}) {
		t.Errorf("taints %v", got)
	}
	p := getPod(t, cs, "plain")
	if p.DeletionTimestamp != nil {
		t.Error("pod evicted during full disruption")
	}
	if c := podCondition(p, corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("pod on the silent node still ready: %+v", p.Status.Conditions)
	}
}

// TestPodMarkedNotReadyOnce: a kubelet that is still alive while its node
// is Unknown writes its pods Ready again; the controller does not mark
// them again (which would be a tug of war, one write per kubelet write)
// until the node was Ready in between.
func TestPodMarkedNotReadyOnce(t *testing.T) {
	ctx, cs, c := newController(t, 500*time.Millisecond)
	var marks atomic.Int32
	c.Logger = slog.New(countingHandler{Handler: c.Logger.Handler(), msg: "marked pod not ready: its node is not", n: &marks})
	dying := startKubelet(t, ctx, cs, "dying")
	startKubelet(t, ctx, cs, "steady")
	runPod(t, cs, "patient", "dying", corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute})
	controllertest.Run(t, c, 2)

	dying.setBeating(false)
	notReady := func() bool {
		c := podCondition(getPod(t, cs, "patient"), corev1.PodReady)
		return c != nil && c.Status == corev1.ConditionFalse
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return notReady(), nil
	}); err != nil {
		t.Fatal("pod on the silent node not marked not ready")
	}
	// The pod's kubelet says Ready again, a few times.
	for range 5 {
		p := getPod(t, cs, "patient")
		podCondition(p, corev1.PodReady).Status = corev1.ConditionTrue
		if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if notReady() {
			t.Error("pod marked not ready again")
		}
	}
	if n := marks.Load(); n != 1 {
		t.Errorf("pod marked not ready %d times, want once", n)
	}
}

// countingHandler counts the records with message msg.
type countingHandler struct {
	slog.Handler
	msg string
	n   *atomic.Int32
}

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

func (h countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return countingHandler{h.Handler.WithAttrs(as), h.msg, h.n}
}

func (h countingHandler) WithGroup(g string) slog.Handler {
	return countingHandler{h.Handler.WithGroup(g), h.msg, h.n}
}
