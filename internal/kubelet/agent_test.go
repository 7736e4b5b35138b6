package kubelet_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/image"
	"plainkube.dev/plainkube/internal/kubelet"
	"plainkube.dev/plainkube/internal/kubelet/containerd"
	"plainkube.dev/plainkube/pkg/testenv"
)

const busyboxBin = "/bin/busybox"

// startNode starts containerd under a temporary directory, imports a
// busybox image built from the host's static busybox, and runs an agent
// against an in-process control plane. It skips unless it can.
func startNode(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run containerd")
	}
	if err := containerd.CheckInstalled(""); err != nil {
		t.Skip(err.Error())
	}
	if _, err := os.Stat(busyboxBin); err != nil {
		t.Skip("needs a static busybox at /bin/busybox: apt-get install -y busybox-static")
	}
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	rt, err := containerd.Start(ctx, containerd.Options{DataDir: dir + "/containerd"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		if err := rt.RemoveAllPods(cctx); err != nil {
			t.Logf("removing pods: %v", err)
		}
		rt.Stop()
	})
	img, err := image.FromBinary(busyboxBin, "/bin/busybox", "/bin/sh", "/bin/sleep", "/bin/echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := image.Load(ctx, rt.Socket(), img, "busybox:test"); err != nil {
		t.Fatal(err)
	}

	env := testenv.Start(t, testenv.WithControllers(), testenv.WithScheduler())
	agent, err := kubelet.New(env.Config, kubelet.Options{
		NodeName: "node-1", DataDir: dir, Runtime: rt, ControlPlane: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- agent.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("agent did not stop")
		}
	})
	cs := kubernetes.NewForConfigOrDie(env.Config)
	waitFor(t, time.Minute, "node Ready", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	return cs, dir
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, cond)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func busyboxPod(name string, policy corev1.RestartPolicy, script string) *corev1.Pod {
	grace := int64(5)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			HostNetwork:                   true,
			RestartPolicy:                 policy,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox:test", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"busybox", "sh", "-c", script},
			}},
		},
	}
}

func getPod(ctx context.Context, cs kubernetes.Interface, name string) (*corev1.Pod, error) {
	return cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
}

func TestPodLifecycle(t *testing.T) {
	cs, dir := startNode(t)
	ctx := context.Background()

	node, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv := node.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rv, "containerd://") {
		t.Errorf("runtime version = %q", rv)
	}
	if _, ok := node.Labels[kubelet.LabelControlPlane]; !ok || node.Labels[corev1.LabelHostname] != "node-1" {
		t.Errorf("labels = %v", node.Labels)
	}
	if node.Status.Capacity.Cpu().IsZero() || node.Status.Capacity.Memory().IsZero() || node.Status.Capacity.Pods().Value() != 110 {
		t.Errorf("capacity = %v", node.Status.Capacity)
	}
	if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node-1", metav1.GetOptions{}); err != nil {
		t.Errorf("lease: %v", err)
	}

	t.Run("running", func(t *testing.T) {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, busyboxPod("sleeper", corev1.RestartPolicyAlways, "echo hi; sleep 3600"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pod *corev1.Pod
		waitFor(t, time.Minute, "pod Running", func(ctx context.Context) (bool, error) {
			p, err := getPod(ctx, cs, "sleeper")
			pod = p
			return err == nil && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil, nil
		})
		st := pod.Status.ContainerStatuses[0]
		if !strings.HasPrefix(st.ContainerID, "containerd://") || st.ImageID == "" || !st.Ready {
			t.Errorf("container status = %+v", st)
		}
		if pod.Status.PodIP == "" || pod.Status.HostIP == "" || pod.Status.StartTime == nil {
			t.Errorf("pod status = %+v", pod.Status)
		}
		ready := false
		for _, c := range pod.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			t.Errorf("not Ready: %+v", pod.Status.Conditions)
		}
		// The log has what the container printed.
		logPath := dir + "/pods/default_sleeper_" + string(pod.UID) + "/main/0.log"
		waitFor(t, 10*time.Second, "container log", func(context.Context) (bool, error) {
			b, _ := os.ReadFile(logPath)
			return strings.Contains(string(b), "hi"), nil
		})

		// Graceful deletion: sh ignores SIGTERM as PID 1, so the stop takes
		// the grace period (5s), and then the pod is gone.
		start := time.Now()
		if err := cs.CoreV1().Pods("default").Delete(ctx, "sleeper", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "pod deleted", func(ctx context.Context) (bool, error) {
			_, err := getPod(ctx, cs, "sleeper")
			return apierrors.IsNotFound(err), nil
		})
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("deletion took %s, grace period 5s", took)
		}
	})

	t.Run("failed", func(t *testing.T) {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, busyboxPod("failer", corev1.RestartPolicyNever, "echo bye; exit 1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pod *corev1.Pod
		waitFor(t, time.Minute, "pod Failed", func(ctx context.Context) (bool, error) {
			p, err := getPod(ctx, cs, "failer")
			pod = p
			return err == nil && p.Status.Phase == corev1.PodFailed, nil
		})
		term := pod.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode != 1 || term.Reason != "Error" {
			t.Errorf("container state = %+v", pod.Status.ContainerStatuses[0].State)
		}
	})

	t.Run("crash loop", func(t *testing.T) {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, busyboxPod("crasher", corev1.RestartPolicyAlways, "exit 2"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The first restart is immediate, the next waits 10s: so the pod
		// shows CrashLoopBackOff with one restart and the last exit code.
		waitFor(t, time.Minute, "CrashLoopBackOff", func(ctx context.Context) (bool, error) {
			p, err := getPod(ctx, cs, "crasher")
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, nil
			}
			st := p.Status.ContainerStatuses[0]
			return st.State.Waiting != nil && st.State.Waiting.Reason == "CrashLoopBackOff" && st.RestartCount >= 1 &&
				st.LastTerminationState.Terminated != nil && st.LastTerminationState.Terminated.ExitCode == 2 &&
				p.Status.Phase == corev1.PodRunning, nil
		})
	})

	t.Run("missing image", func(t *testing.T) {
		p := busyboxPod("noimage", corev1.RestartPolicyAlways, "true")
		p.Spec.Containers[0].Image = "example.com/absent:1"
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, "ErrImagePull", func(ctx context.Context) (bool, error) {
			p, err := getPod(ctx, cs, "noimage")
			if err != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
				return false, nil
			}
			r := p.Status.ContainerStatuses[0].State.Waiting.Reason
			return r == "ErrImagePull" || r == "ImagePullBackOff", nil
		})
	})
}
