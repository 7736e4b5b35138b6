package deployment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/controllertest"
	"plainkube.dev/plainkube/internal/controller/replicaset"
)

const ns = "default"

type env struct {
	t          *testing.T
	cs         kubernetes.Interface
	kubeconfig string
	// ready, when true, makes the fake kubelet mark every new pod ready.
	mu    sync.Mutex
	ready bool
}

// start runs an in-memory control plane with the deployment and
// ReplicaSet controllers, and a fake kubelet that marks pods ready while
// e.setReady(true).
func start(t *testing.T) *env {
	t.Helper()
	s := controllertest.NewServer(t)
	cfg := s.LoopbackConfig()
	dc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc.Logger = controllertest.Logger(t)
	rc, err := replicaset.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	controllertest.Run(t, dc, 2)
	controllertest.Run(t, rc, 2)
	e := &env{t: t, cs: controllertest.Clientset(t, cfg), kubeconfig: s.KubeconfigPath, ready: true}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); e.kubelet(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
	return e
}

func (e *env) setReady(v bool) {
	e.mu.Lock()
	e.ready = v
	e.mu.Unlock()
}

// kubelet marks pods Running and Ready (while e.ready), as a node would.
func (e *env) kubelet(ctx context.Context) {
	factory := informers.NewSharedInformerFactoryWithOptions(e.cs, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	work := make(chan string, 1000)
	enqueue := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.DeletionTimestamp == nil && !podReady(p) {
			select {
			case work <- p.Name:
			default:
			}
		}
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }})
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			// Pods skipped while not ready-ing are looked at again.
			for _, o := range inf.GetStore().List() {
				enqueue(o)
			}
		case name := <-work:
			e.mu.Lock()
			ready := e.ready
			e.mu.Unlock()
			if !ready {
				continue
			}
			// A kubelet takes a moment to start a container.
			time.Sleep(5 * time.Millisecond)
			_ = markReady(ctx, e.cs, name)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func markReady(ctx context.Context, cs kubernetes.Interface, name string) error {
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil || podReady(p) {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// eventually polls cond every 20 ms for up to 20 s.
func (e *env) eventually(what string, cond func() (bool, error)) {
	e.t.Helper()
	controllertest.EventuallyWithin(e.t, 20*time.Millisecond, 20*time.Second, what, cond)
}

func newDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	}
}

func (e *env) create(d *appsv1.Deployment) *appsv1.Deployment {
	e.t.Helper()
	out, err := e.cs.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) get(name string) *appsv1.Deployment {
	e.t.Helper()
	d, err := e.cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) patch(name, patch string) {
	e.t.Helper()
	if _, err := e.cs.AppsV1().Deployments(ns).Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) setImage(name, image string) {
	e.patch(name, fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, image))
}

// replicaSets are the ReplicaSets the deployment controls (in no order:
// creation timestamps have only seconds).
func (e *env) replicaSets(d *appsv1.Deployment) []appsv1.ReplicaSet {
	e.t.Helper()
	l, err := e.cs.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []appsv1.ReplicaSet
	for _, rs := range l.Items {
		if metav1.IsControlledBy(&rs, d) {
			out = append(out, rs)
		}
	}
	return out
}

// split returns the ReplicaSet with uid and the other one of two.
func split(t *testing.T, rss []appsv1.ReplicaSet, uid types.UID) (this, other appsv1.ReplicaSet) {
	t.Helper()
	if len(rss) != 2 {
		t.Fatalf("%d replica sets, want 2", len(rss))
	}
	if rss[0].UID == uid {
		return rss[0], rss[1]
	}
	if rss[1].UID != uid {
		t.Fatalf("replica set %s is gone", uid)
	}
	return rss[1], rss[0]
}

func (e *env) pods(selector string) []corev1.Pod {
	e.t.Helper()
	l, err := e.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// rolloutStatus is kubectl's DeploymentStatusViewer.
func rolloutStatus(d *appsv1.Deployment) (string, bool, error) {
	if d.Generation <= d.Status.ObservedGeneration {
		if c := getCondition(d.Status, appsv1.DeploymentProgressing); c != nil && c.Reason == ReasonTimedOut {
			return "", false, fmt.Errorf("deployment %q exceeded its progress deadline", d.Name)
		}
		if d.Spec.Replicas != nil && d.Status.UpdatedReplicas < *d.Spec.Replicas {
			return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...", d.Name, d.Status.UpdatedReplicas, *d.Spec.Replicas), false, nil
		}
		if d.Status.Replicas > d.Status.UpdatedReplicas {
			return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...", d.Name, d.Status.Replicas-d.Status.UpdatedReplicas), false, nil
		}
		if d.Status.AvailableReplicas < d.Status.UpdatedReplicas {
			return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", d.Name, d.Status.AvailableReplicas, d.Status.UpdatedReplicas), false, nil
		}
		return fmt.Sprintf("deployment %q successfully rolled out", d.Name), true, nil
	}
	return "Waiting for deployment spec update to be observed...", false, nil
}

func (e *env) waitRolledOut(name string) *appsv1.Deployment {
	e.t.Helper()
	var d *appsv1.Deployment
	e.eventually("deployment "+name+" rolled out", func() (bool, error) {
		d = e.get(name)
		_, done, err := rolloutStatus(d)
		return done, err
	})
	return d
}

// kubectl runs the real kubectl against the test's API server, or skips
// the test if there is none.
func (e *env) kubectl(args ...string) string {
	e.t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		e.t.Skip("kubectl is not installed")
	}
	cmd := exec.Command(path, append([]string{"--kubeconfig", e.kubeconfig, "-n", ns}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func (e *env) events(name string) []corev1.Event {
	e.t.Helper()
	l, err := e.cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

func (e *env) waitEvent(object, reason, message string) {
	e.t.Helper()
	e.waitEventMatching(object, reason, message, func(m string) bool { return m == message })
}

func (e *env) waitEventMatching(object, reason, what string, match func(string) bool) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("event %s %q on %s", reason, what, object), func() (bool, error) {
		for _, ev := range e.events(object) {
			if ev.Reason == reason && match(ev.Message) {
				return true, nil
			}
		}
		return false, nil
	})
}

func TestDeploymentCreatesReplicaSetAndPods(t *testing.T) {
	e := start(t)
	d := e.create(newDeployment("web", 3, "nginx:1.27"))
	d = e.waitRolledOut("web")

	rss := e.replicaSets(d)
	if len(rss) != 1 {
		t.Fatalf("%d replica sets, want 1", len(rss))
	}
	rs := rss[0]
	hash := ComputeHash(&d.Spec.Template, nil)
	if rs.Name != "web-"+hash || rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Labels["app"] != "web" {
		t.Errorf("replica set %s: labels %v selector %v template labels %v (hash %s)", rs.Name, rs.Labels, rs.Spec.Selector, rs.Spec.Template.Labels, hash)
	}
	ref := metav1.GetControllerOf(&rs)
	if ref == nil || ref.UID != d.UID || ref.Kind != "Deployment" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("owner = %+v", rs.OwnerReferences)
	}
	if a := rs.Annotations; a[RevisionAnnotation] != "1" || a[DesiredReplicasAnnotation] != "3" || a[MaxReplicasAnnotation] != "4" {
		t.Errorf("replica set annotations = %v", a)
	}
	if d.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("deployment annotations = %v", d.Annotations)
	}
	pods := e.pods("app=web")
	if len(pods) != 3 {
		t.Fatalf("%d pods", len(pods))
	}
	for _, p := range pods {
		if p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || !metav1.IsControlledBy(&p, &rs) {
			t.Errorf("pod %s labels %v owners %v", p.Name, p.Labels, p.OwnerReferences)
		}
	}
	st := d.Status
	if st.Replicas != 3 || st.UpdatedReplicas != 3 || st.ReadyReplicas != 3 || st.AvailableReplicas != 3 || st.UnavailableReplicas != 0 ||
		st.ObservedGeneration != d.Generation {
		t.Errorf("status = %+v", st)
	}
	if c := cond(st, appsv1.DeploymentAvailable); c.Status != corev1.ConditionTrue || c.Reason != ReasonMinimumReplicasAvailable {
		t.Errorf("Available = %+v", c)
	}
	e.eventually("Progressing NewReplicaSetAvailable", func() (bool, error) {
		c := cond(e.get("web").Status, appsv1.DeploymentProgressing)
		return c.Status == corev1.ConditionTrue && c.Reason == ReasonNewReplicaSetAvailable &&
			c.Message == fmt.Sprintf("ReplicaSet %q has successfully progressed.", rs.Name), nil
	})
	e.waitEvent("web", "ScalingReplicaSet", fmt.Sprintf("Scaled up replica set %s from 0 to 3", rs.Name))

	// Scaling (through /scale, as kubectl scale does) resizes the ReplicaSet.
	sc, err := e.cs.AppsV1().Deployments(ns).GetScale(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = 1
	if _, err := e.cs.AppsV1().Deployments(ns).UpdateScale(context.Background(), "web", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// (kubectl rollout status is content as soon as the scale is observed;
	// the status counts the pods going away until they are gone.)
	e.eventually("1 pod", func() (bool, error) {
		d = e.get("web")
		_, done, err := rolloutStatus(d)
		return done && d.Status.Replicas == 1 && len(e.pods("app=web")) == 1 && len(e.replicaSets(d)) == 1, err
	})
	e.waitEvent("web", "ScalingReplicaSet", fmt.Sprintf("Scaled down replica set %s from 3 to 1", rs.Name))

	// The real kubectl agrees.
	if out := e.kubectl("rollout", "status", "deployment/web", "--timeout=10s"); !strings.Contains(out, `deployment "web" successfully rolled out`) {
		t.Errorf("kubectl rollout status: %s", out)
	}
	if out := e.kubectl("describe", "deployment", "web"); !strings.Contains(out, "Scaled up replica set "+rs.Name+" from 0 to 3") ||
		!strings.Contains(out, "NewReplicaSet:   "+rs.Name+" (1/1 replicas created)") {
		t.Errorf("kubectl describe:\n%s", out)
	}
}

// monitor watches a deployment's ReplicaSets and pods and records
// violations of the rolling-update bounds.
type monitor struct {
	mu         sync.Mutex
	maxSpec    int // most pods the ReplicaSets asked for at once
	minReady   int // fewest ready pods seen
	violations []string
}

func (e *env) monitor(ctx context.Context, d *appsv1.Deployment, maxPods, minReady int) *monitor {
	m := &monitor{minReady: 1 << 30}
	armed := false // checks start once both caches are full
	factory := informers.NewSharedInformerFactoryWithOptions(e.cs, 0, informers.WithNamespace(ns))
	rsInf := factory.Apps().V1().ReplicaSets().Informer()
	podInf := factory.Core().V1().Pods().Informer()
	check := func(any) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if !armed {
			return
		}
		spec := 0
		for _, o := range rsInf.GetStore().List() {
			if rs := o.(*appsv1.ReplicaSet); metav1.IsControlledBy(rs, d) {
				spec += int(*rs.Spec.Replicas)
			}
		}
		ready := 0
		for _, o := range podInf.GetStore().List() {
			if p := o.(*corev1.Pod); p.DeletionTimestamp == nil && podReady(p) && p.Labels["app"] == d.Name {
				ready++
			}
		}
		m.maxSpec = max(m.maxSpec, spec)
		m.minReady = min(m.minReady, ready)
		if spec > maxPods {
			m.violations = append(m.violations, fmt.Sprintf("replica sets ask for %d pods (max %d)", spec, maxPods))
		}
		if ready < minReady {
			m.violations = append(m.violations, fmt.Sprintf("%d ready pods (min %d)", ready, minReady))
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: check, UpdateFunc: func(_, o any) { check(o) }, DeleteFunc: check}
	rsInf.AddEventHandler(h)
	podInf.AddEventHandler(h)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	m.mu.Lock()
	armed = true
	m.mu.Unlock()
	check(nil)
	return m
}

func TestRollingUpdateAndUndo(t *testing.T) {
	e := start(t)
	dep := newDeployment("web", 4, "nginx:1.26")
	one := intstr.FromInt32(1)
	dep.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &one}}
	e.create(dep)
	d := e.waitRolledOut("web")
	first := e.replicaSets(d)[0]

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := e.monitor(ctx, d, 5, 3)
	e.setImage("web", "nginx:1.27")
	d = e.waitRolledOut("web")
	oldRS, second := split(t, e.replicaSets(d), first.UID)
	if *oldRS.Spec.Replicas != 0 || *second.Spec.Replicas != 4 || second.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Errorf("after the rollout: %s=%d, %s=%d", oldRS.Name, *oldRS.Spec.Replicas, second.Name, *second.Spec.Replicas)
	}
	if second.Annotations[RevisionAnnotation] != "2" || d.Annotations[RevisionAnnotation] != "2" {
		t.Errorf("revisions: replica set %q, deployment %q", second.Annotations[RevisionAnnotation], d.Annotations[RevisionAnnotation])
	}
	e.eventually("the old pods gone", func() (bool, error) {
		return len(e.pods("app=web,"+appsv1.DefaultDeploymentUniqueLabelKey+"="+first.Labels[appsv1.DefaultDeploymentUniqueLabelKey])) == 0, nil
	})
	m.mu.Lock()
	if len(m.violations) > 0 {
		t.Errorf("rolling-update bounds violated: %v", m.violations)
	}
	t.Logf("at most %d pods asked for, at least %d ready", m.maxSpec, m.minReady)
	m.mu.Unlock()
	down := fmt.Sprintf("Scaled down replica set %s from ", first.Name)
	e.waitEventMatching("web", "ScalingReplicaSet", down+"N to 0", func(m string) bool {
		return strings.HasPrefix(m, down) && strings.HasSuffix(m, " to 0")
	})

	// kubectl rollout undo patches the template back from revision 1: that
	// ReplicaSet becomes the new one, as revision 3.
	undo := func() {
		if _, err := exec.LookPath("kubectl"); err == nil {
			e.kubectl("rollout", "undo", "deployment/web")
			return
		}
		// Without kubectl, what it does.
		tmpl := first.Spec.Template.DeepCopy()
		delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		patch, _ := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/template", "value": tmpl}})
		if _, err := e.cs.AppsV1().Deployments(ns).Patch(context.Background(), "web", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	undo()
	d = e.waitRolledOut("web")
	undone, undoneFrom := split(t, e.replicaSets(d), first.UID)
	if *undone.Spec.Replicas != 4 || *undoneFrom.Spec.Replicas != 0 {
		t.Errorf("after undo: %s=%d, %s=%d", undone.Name, *undone.Spec.Replicas, undoneFrom.Name, *undoneFrom.Spec.Replicas)
	}
	if a := undone.Annotations; a[RevisionAnnotation] != "3" || a[RevisionHistoryAnnotation] != "1" {
		t.Errorf("undone replica set annotations = %v", a)
	}
	if d.Annotations[RevisionAnnotation] != "3" || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.26" {
		t.Errorf("deployment revision %q image %q", d.Annotations[RevisionAnnotation], d.Spec.Template.Spec.Containers[0].Image)
	}
	m.mu.Lock()
	if len(m.violations) > 0 {
		t.Errorf("rolling-update bounds violated: %v", m.violations)
	}
	m.mu.Unlock()
	if _, err := exec.LookPath("kubectl"); err == nil {
		out := e.kubectl("rollout", "history", "deployment/web")
		if !strings.Contains(out, "2 ") || !strings.Contains(out, "3 ") || strings.Contains(out, "\n1 ") {
			t.Errorf("kubectl rollout history:\n%s", out)
		}
	}
}

func TestRecreate(t *testing.T) {
	e := start(t)
	dep := newDeployment("web", 3, "nginx:1.26")
	dep.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	e.create(dep)
	d := e.waitRolledOut("web")
	first := e.replicaSets(d)[0]
	firstHash := first.Labels[appsv1.DefaultDeploymentUniqueLabelKey]

	// Never pods of both templates at once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := e.cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var mixed []string
	go func() {
		live := map[string]string{} // pod → hash
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted || p.DeletionTimestamp != nil {
				delete(live, p.Name)
			} else {
				live[p.Name] = p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
			}
			hashes := map[string]bool{}
			for _, h := range live {
				hashes[h] = true
			}
			if len(hashes) > 1 {
				mu.Lock()
				mixed = append(mixed, fmt.Sprint(live))
				mu.Unlock()
			}
		}
	}()
	e.setImage("web", "nginx:1.27")
	d = e.waitRolledOut("web")
	oldRS, newRS := split(t, e.replicaSets(d), first.UID)
	if *oldRS.Spec.Replicas != 0 || *newRS.Spec.Replicas != 3 {
		t.Fatalf("after recreate: old %d, new %d", *oldRS.Spec.Replicas, *newRS.Spec.Replicas)
	}
	if n := len(e.pods("app=web," + appsv1.DefaultDeploymentUniqueLabelKey + "=" + firstHash)); n != 0 {
		t.Errorf("%d old pods left", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(mixed) > 0 {
		t.Errorf("old and new pods ran together: %v", mixed[0])
	}
}

func TestPauseScaleResume(t *testing.T) {
	e := start(t)
	e.create(newDeployment("web", 2, "nginx:1.26"))
	d := e.waitRolledOut("web")
	e.patch("web", `{"spec":{"paused":true}}`)
	e.eventually("the Paused condition", func() (bool, error) {
		c := cond(e.get("web").Status, appsv1.DeploymentProgressing)
		return c.Status == corev1.ConditionUnknown && c.Reason == ReasonPaused && c.Message == "Deployment is paused", nil
	})
	e.setImage("web", "nginx:1.27")
	// Scaling works while paused; no new ReplicaSet appears.
	e.patch("web", `{"spec":{"replicas":5}}`)
	e.eventually("5 pods", func() (bool, error) {
		d := e.get("web")
		return len(e.pods("app=web")) == 5 && d.Status.Replicas == 5 && d.Status.AvailableReplicas == 5 &&
			d.Status.ObservedGeneration == d.Generation, nil
	})
	rss := e.replicaSets(d)
	if len(rss) != 1 || *rss[0].Spec.Replicas != 5 || rss[0].Annotations[DesiredReplicasAnnotation] != "5" {
		t.Fatalf("paused: %d replica sets", len(rss))
	}
	if msg, done, _ := rolloutStatus(e.get("web")); done {
		t.Errorf("rollout status says done while paused with a new template: %s", msg)
	}
	e.patch("web", `{"spec":{"paused":false}}`)
	d = e.waitRolledOut("web")
	oldRS, newRS := split(t, e.replicaSets(d), rss[0].UID)
	if *oldRS.Spec.Replicas != 0 || *newRS.Spec.Replicas != 5 || newRS.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Fatalf("resumed: old %d, new %d", *oldRS.Spec.Replicas, *newRS.Spec.Replicas)
	}
	e.eventually("Progressing NewReplicaSetAvailable after resume", func() (bool, error) {
		c := cond(e.get("web").Status, appsv1.DeploymentProgressing)
		return c.Reason == ReasonNewReplicaSetAvailable, nil
	})
}

func TestRevisionHistoryLimit(t *testing.T) {
	e := start(t)
	dep := newDeployment("web", 1, "nginx:1")
	dep.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	e.create(dep)
	d := e.waitRolledOut("web")
	for i := 2; i <= 4; i++ {
		e.setImage("web", fmt.Sprintf("nginx:%d", i))
		d = e.waitRolledOut("web")
	}
	e.eventually("one old replica set kept", func() (bool, error) {
		var revs []string
		for _, rs := range e.replicaSets(d) {
			revs = append(revs, rs.Annotations[RevisionAnnotation])
		}
		slices.Sort(revs)
		return slices.Equal(revs, []string{"3", "4"}), nil
	})
}

func TestProgressDeadlineExceeded(t *testing.T) {
	e := start(t)
	e.setReady(false)
	dep := newDeployment("web", 2, "nginx:1")
	dep.Spec.ProgressDeadlineSeconds = ptr.To[int32](1)
	e.create(dep)
	e.eventually("ProgressDeadlineExceeded", func() (bool, error) {
		d := e.get("web")
		c := cond(d.Status, appsv1.DeploymentProgressing)
		rss := e.replicaSets(d)
		return len(rss) == 1 && c.Status == corev1.ConditionFalse && c.Reason == ReasonTimedOut &&
			c.Message == fmt.Sprintf("ReplicaSet %q has timed out progressing.", rss[0].Name), nil
	})
	d := e.get("web")
	if _, _, err := rolloutStatus(d); err == nil || err.Error() != `deployment "web" exceeded its progress deadline` {
		t.Errorf("rollout status error = %v", err)
	}
	if c := cond(d.Status, appsv1.DeploymentAvailable); c.Status != corev1.ConditionFalse || c.Reason != ReasonMinimumReplicasUnavailable {
		t.Errorf("Available = %+v", c)
	}
	// Pods becoming ready after the deadline still complete the rollout.
	e.setReady(true)
	e.waitRolledOut("web")
}

func TestAdoptsAndReleasesReplicaSets(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	dep := newDeployment("web", 2, "nginx:1")
	// An orphan ReplicaSet with the deployment's template, as left behind by
	// `kubectl delete deployment --cascade=orphan`.
	orphan := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-orphan", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: dep.Spec.Selector.DeepCopy(),
			Template: *dep.Spec.Template.DeepCopy()},
	}
	orphan, err := e.cs.AppsV1().ReplicaSets(ns).Create(ctx, orphan, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Its pods are there, as they would be: the controllers' informers
	// have seen it (a deployment controller that had not would make a new
	// ReplicaSet and scale the orphan down once it saw it, as upstream's).
	e.eventually("the orphan's pods", func() (bool, error) {
		pods, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == orphan.UID {
				n++
			}
		}
		return n == 2, nil
	})
	d := e.create(dep)
	d = e.waitRolledOut("web")
	rss := e.replicaSets(d)
	if len(rss) != 1 || rss[0].UID != orphan.UID || rss[0].Annotations[RevisionAnnotation] != "1" {
		t.Fatalf("want the orphan adopted as the new replica set, got %d", len(rss))
	}
	// Relabelled out of the selector: released, and replaced.
	if _, err := e.cs.AppsV1().ReplicaSets(ns).Patch(ctx, "web-orphan", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"app":"elsewhere"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the replica set released and replaced", func() (bool, error) {
		rs, err := e.cs.AppsV1().ReplicaSets(ns).Get(ctx, "web-orphan", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		rss := e.replicaSets(d)
		return metav1.GetControllerOf(rs) == nil && len(rss) == 1 && rss[0].UID != orphan.UID, nil
	})
}
