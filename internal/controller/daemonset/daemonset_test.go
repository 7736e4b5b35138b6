package daemonset_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/controllertest"
	"plainkube.dev/plainkube/internal/controller/daemonset"
	"plainkube.dev/plainkube/pkg/testenv"
)

var kubeconfig string // of the last start; tests are not parallel

func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	env := testenv.Start(t, testenv.WithScheduler(), testenv.WithSimNodes(3))
	kubeconfig = env.KubeconfigPath
	c, err := daemonset.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.LoggerAt(t, slog.LevelInfo)
	controllertest.Run(t, c, 2)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	eventually(t, "3 nodes", func() (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		return err == nil && len(nodes.Items) == 3, err
	})
	return cs
}

// eventually polls cond every 50 ms for up to 30 s.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	controllertest.EventuallyWithin(t, 50*time.Millisecond, 30*time.Second, what, cond)
}

// setImage sets the image of the first container of DaemonSet name.
func setImage(t *testing.T, cs kubernetes.Interface, name, image string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := cs.AppsV1().DaemonSets("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		_, err = cs.AppsV1().DaemonSets("default").Update(context.Background(), d, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func newDS(name string) *appsv1.DaemonSet {
	lbls := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: lbls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
			},
		},
	}
}

// podsByNode are the live pods of the DaemonSet by target node.
func podsByNode(cs kubernetes.Interface, name string) (map[string][]corev1.Pod, error) {
	pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, err
	}
	out := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[daemonset.TargetNode(&p)] = append(out[daemonset.TargetNode(&p)], p)
		}
	}
	return out, nil
}

func onePerNode(cs kubernetes.Interface, name string, nodes []string) (bool, error) {
	m, err := podsByNode(cs, name)
	if err != nil {
		return false, err
	}
	if len(m) != len(nodes) {
		return false, fmt.Errorf("pods on %d nodes: %v", len(m), m)
	}
	for _, n := range nodes {
		if len(m[n]) != 1 {
			return false, fmt.Errorf("node %s has %d pods", n, len(m[n]))
		}
	}
	return true, nil
}

func nodeNames(t *testing.T, cs kubernetes.Interface) []string {
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range nodes.Items {
		out = append(out, n.Name)
	}
	return out
}

func TestOnePodPerNodeAndNewNodes(t *testing.T) {
	cs := start(t)
	ctx := context.Background()
	nodes := nodeNames(t, cs)
	ds, err := cs.AppsV1().DaemonSets("default").Create(ctx, newDS("agent"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "one pod per node", func() (bool, error) { return onePerNode(cs, "agent", nodes) })
	eventually(t, "status ready", func() (bool, error) {
		d, err := cs.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.DesiredNumberScheduled == 3 && s.CurrentNumberScheduled == 3 &&
			s.NumberReady == 3 && s.NumberAvailable == 3 && s.UpdatedNumberScheduled == 3, fmt.Errorf("status %+v", s)
	})
	pods, _ := podsByNode(cs, "agent")
	for node, ps := range pods {
		p := ps[0]
		if p.Spec.NodeName != node {
			t.Errorf("pod %s bound to %q, pinned to %q", p.Name, p.Spec.NodeName, node)
		}
		if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == "" || !metav1.IsControlledBy(&p, ds) {
			t.Errorf("pod %s: labels %v owners %v", p.Name, p.Labels, p.OwnerReferences)
		}
		found := false
		for _, tol := range p.Spec.Tolerations {
			found = found || tol.Key == daemonset.TaintNodeUnreachable
		}
		if !found {
			t.Errorf("pod %s lacks default tolerations: %v", p.Name, p.Spec.Tolerations)
		}
	}
	eventually(t, "SuccessfulCreate events", func() (bool, error) {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=agent"})
		if err != nil {
			return false, err
		}
		n := 0
		for _, e := range evs.Items {
			if e.Reason == "SuccessfulCreate" && e.Source.Component == daemonset.Component {
				n += int(max(e.Count, 1))
			}
		}
		return n == 3, fmt.Errorf("%d creates recorded", n)
	})
	revs, err := cs.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil || len(revs.Items) != 1 || revs.Items[0].Revision != 1 {
		t.Fatalf("revisions: %v %v", revs, err)
	}

	// A new node gets a pod; a tainted node does not.
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "extra"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "tainted"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}}},
	} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "a pod for the new node", func() (bool, error) {
		return onePerNode(cs, "agent", append(nodes, "extra"))
	})
	time.Sleep(300 * time.Millisecond)
	if ok, err := onePerNode(cs, "agent", append(nodes, "extra")); !ok {
		t.Fatalf("after a while: %v", err)
	}
	d, err := cs.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
	if err != nil || d.Status.DesiredNumberScheduled != 4 {
		t.Fatalf("desired: %+v %v", d.Status, err)
	}
}

func TestRollingUpdate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		surge   intstr.IntOrString
		unavail intstr.IntOrString
	}{
		{"maxUnavailable", intstr.FromInt32(0), intstr.FromInt32(1)},
		{"maxSurge", intstr.FromInt32(1), intstr.FromInt32(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := start(t)
			ctx := context.Background()
			nodes := nodeNames(t, cs)
			ds := newDS("roll")
			ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: &tc.surge, MaxUnavailable: &tc.unavail}}
			if _, err := cs.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "one pod per node", func() (bool, error) { return onePerNode(cs, "roll", nodes) })
			setImage(t, cs, "roll", "busybox:1.37")
			controllertest.RolloutStatus(t, kubeconfig, "daemonset/roll")
			eventually(t, "rollout done", func() (bool, error) {
				d, err := cs.AppsV1().DaemonSets("default").Get(ctx, "roll", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				s := d.Status
				// kubectl rollout status's test.
				if s.ObservedGeneration < d.Generation || s.UpdatedNumberScheduled < s.DesiredNumberScheduled ||
					s.NumberAvailable < s.DesiredNumberScheduled || s.DesiredNumberScheduled != 3 {
					return false, fmt.Errorf("status %+v", s)
				}
				m, err := podsByNode(cs, "roll")
				if err != nil {
					return false, err
				}
				for n, ps := range m {
					if len(ps) != 1 || ps[0].Spec.Containers[0].Image != "busybox:1.37" {
						return false, fmt.Errorf("node %s: %d pods", n, len(ps))
					}
				}
				return len(m) == 3, nil
			})
			revs, err := cs.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{LabelSelector: "app=roll"})
			if err != nil || len(revs.Items) != 2 {
				t.Fatalf("revisions: %d %v", len(revs.Items), err)
			}
		})
	}
}

func TestOnDelete(t *testing.T) {
	cs := start(t)
	ctx := context.Background()
	nodes := nodeNames(t, cs)
	ds := newDS("od")
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	if _, err := cs.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one pod per node", func() (bool, error) { return onePerNode(cs, "od", nodes) })
	before, _ := podsByNode(cs, "od")
	setImage(t, cs, "od", "busybox:1.37")
	eventually(t, "generation observed", func() (bool, error) {
		d, err := cs.AppsV1().DaemonSets("default").Get(ctx, "od", metav1.GetOptions{})
		return err == nil && d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedNumberScheduled == 0, err
	})
	time.Sleep(300 * time.Millisecond)
	after, _ := podsByNode(cs, "od")
	for n, ps := range before {
		if len(after[n]) != 1 || after[n][0].UID != ps[0].UID {
			t.Fatalf("OnDelete replaced the pod on %s", n)
		}
	}
	// A deleted pod comes back on the new template.
	victim := before[nodes[0]][0]
	if err := cs.CoreV1().Pods("default").Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "replacement on the new template", func() (bool, error) {
		m, err := podsByNode(cs, "od")
		if err != nil || len(m[nodes[0]]) != 1 {
			return false, err
		}
		p := m[nodes[0]][0]
		return p.UID != victim.UID && p.Spec.Containers[0].Image == "busybox:1.37", nil
	})
}
