package kubelet_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/image"
	"plainkube.dev/plainkube/internal/kubelet"
	"plainkube.dev/plainkube/internal/kubelet/containerd"
	"plainkube.dev/plainkube/internal/kubelet/network"
	"plainkube.dev/plainkube/pkg/testenv"
)

const busyboxBin = "/bin/busybox"

// startNode starts containerd under a temporary directory, imports a
// busybox image built from the host's static busybox, and runs an agent
// against an in-process control plane. It skips unless it can.
//
// With podCIDR "", the agent leaves the node's pod CIDR to the node IPAM
// controller.
func startNode(t *testing.T, podCIDR string) (kubernetes.Interface, string) {
	t.Helper()
	return startNodeWith(t, podCIDR, nil)
}

// startNodeWith is startNode with options changed by opt (if not nil).
func startNodeWith(t *testing.T, podCIDR string, opt func(*kubelet.Options)) (kubernetes.Interface, string) {
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
		if _, err := rt.RemoveAllPods(cctx); err != nil {
			t.Logf("removing pods: %v", err)
		}
		rt.Stop()
		unmountUnder(t, dir+"/volumes/")
		// The pod bridge outlives an agent on purpose; not a test's.
		if p, err := netip.ParsePrefix(podCIDR); err == nil {
			exec.Command("ip", "link", "del", network.BridgeName(p)).Run()
		}
	})
	img, err := image.FromBinary(busyboxBin, "/bin/busybox", "/bin/sh", "/bin/sleep", "/bin/echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := image.Load(ctx, rt.Socket(), img, "busybox:test"); err != nil {
		t.Fatal(err)
	}

	env := testenv.Start(t, testenv.WithControllers(), testenv.WithScheduler())
	opts := kubelet.Options{
		NodeName: "node-1", DataDir: dir, Runtime: rt, ControlPlane: true, PodCIDR: podCIDR,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if opt != nil {
		opt(&opts)
	}
	agent, err := kubelet.New(env.Config, opts)
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

// unmountUnder unmounts the file systems (the tmpfs volumes of pods left
// running) mounted below prefix.
func unmountUnder(t *testing.T, prefix string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], prefix) {
			if err := syscall.Unmount(f[1], syscall.MNT_DETACH); err != nil {
				t.Logf("unmounting %s: %v", f[1], err)
			}
		}
	}
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
	cs, dir := startNode(t, network.DefaultPodCIDR)
	ctx := context.Background()

	// The control-plane label comes with a second request, made with the
	// control plane's credentials once the node has registered itself.
	var node *corev1.Node
	waitFor(t, 10*time.Second, "control-plane label", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = n
		_, ok := n.Labels[kubelet.LabelControlPlane]
		return ok, nil
	})
	if rv := node.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rv, "containerd://") {
		t.Errorf("runtime version = %q", rv)
	}
	if node.Labels[corev1.LabelHostname] != "node-1" {
		t.Errorf("labels = %v", node.Labels)
	}
	if node.Status.Capacity.Cpu().IsZero() || node.Status.Capacity.Memory().IsZero() || node.Status.Capacity.Pods().Value() != 110 {
		t.Errorf("capacity = %v", node.Status.Capacity)
	}
	// The Node is Ready from its creation; the Lease follows.
	waitFor(t, 10*time.Second, "node lease", func(ctx context.Context) (bool, error) {
		_, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node-1", metav1.GetOptions{})
		return err == nil, nil
	})

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

	t.Run("pod network", func(t *testing.T) {
		if n, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{}); err != nil || n.Spec.PodCIDR != network.DefaultPodCIDR {
			t.Fatalf("node podCIDR: %v %v", n.Spec.PodCIDR, err)
		}
		server := busyboxPod("web", corev1.RestartPolicyAlways,
			"mkdir -p /www && echo hello-from-web > /www/index.html && exec busybox httpd -f -p 8080 -h /www")
		server.Spec.HostNetwork = false
		hostPort := freePort(t)
		server.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: hostPort}}
		server.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, server, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var web *corev1.Pod
		waitFor(t, time.Minute, "web Running with an IP, ready by its HTTP probe", func(ctx context.Context) (bool, error) {
			p, err := getPod(ctx, cs, "web")
			web = p
			return err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.Status.ContainerStatuses[0].Ready, nil
		})
		cidr := netip.MustParsePrefix(network.DefaultPodCIDR)
		ip1, err := netip.ParseAddr(web.Status.PodIP)
		if err != nil || !cidr.Contains(ip1) || len(web.Status.PodIPs) != 1 {
			t.Fatalf("web pod IPs = %q %v", web.Status.PodIP, web.Status.PodIPs)
		}
		// From the host: to the pod's address, and to the hostPort on
		// loopback (portmap).
		for _, u := range []string{"http://" + ip1.String() + ":8080/", fmt.Sprintf("http://127.0.0.1:%d/", hostPort)} {
			waitFor(t, 30*time.Second, "GET "+u, func(ctx context.Context) (bool, error) {
				return httpGet(ctx, u) == "hello-from-web\n", nil
			})
		}
		client := busyboxPod("client", corev1.RestartPolicyNever,
			"busybox sleep 2; for i in $(busybox seq 1 30); do busybox wget -qO- http://"+ip1.String()+":8080/ && exit 0; busybox sleep 0.5; done; exit 1")
		client.Spec.HostNetwork = false
		if _, err := cs.CoreV1().Pods("default").Create(ctx, client, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var cl *corev1.Pod
		waitFor(t, time.Minute, "client finished", func(ctx context.Context) (bool, error) {
			p, err := getPod(ctx, cs, "client")
			cl = p
			return err == nil && terminalPhase(p.Status.Phase) && p.Status.PodIP != "", nil
		})
		ip2, _ := netip.ParseAddr(cl.Status.PodIP)
		if !cidr.Contains(ip2) || ip2 == ip1 {
			t.Errorf("client pod IP %q, web %q", cl.Status.PodIP, ip1)
		}
		b, _ := os.ReadFile(dir + "/pods/default_client_" + string(cl.UID) + "/main/0.log")
		if cl.Status.Phase != corev1.PodSucceeded || !strings.Contains(string(b), "hello-from-web") {
			t.Errorf("client phase %s, log:\n%s", cl.Status.Phase, b)
		}
	})
}

func TestPodVolumesAndEnv(t *testing.T) {
	cs, dir := startNode(t, network.DefaultPodCIDR)
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data:       map[string]string{"a": "alpha", "b": "beta"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sec"},
		Data:       map[string][]byte{"token": []byte("s3cret")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mode := int32(0o600)
	yes := true
	ref := func(from corev1.EnvVarSource) *corev1.EnvVarSource { return &from }
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	pod := busyboxPod("vols", corev1.RestartPolicyAlways, "")
	pod.Labels = map[string]string{"app": "vols"}
	pod.Spec.HostNetwork = false
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
			Items:                []corev1.KeyToPath{{Key: "a", Path: "sub/a.txt", Mode: &mode}},
		}}},
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}},
		{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	}
	writer := pod.Spec.Containers[0]
	writer.Name = "writer"
	writer.Command = []string{"busybox", "sh", "-c", "echo from-writer > /shared/x; echo in-subpath > /sub/y; exec busybox sleep 3600"}
	writer.VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}, {Name: "shared", MountPath: "/sub", SubPath: "d1"}}
	reader := pod.Spec.Containers[0]
	reader.Name = "reader"
	reader.Command = []string{"busybox", "sh", "-c", `
for i in $(busybox seq 1 100); do [ -f /shared/x ] && [ -f /shared/d1/y ] && break; busybox sleep 0.1; done
echo "shared=` + "`busybox cat /shared/x`/`busybox cat /shared/d1/y`" + `"
echo "cfg=` + "`busybox cat /config/sub/a.txt`/`busybox stat -c %a /config/sub/a.txt`/`busybox ls /config`" + `"
echo "secret=` + "`busybox cat /secret/token`" + `"
if busybox touch /config/z 2>/dev/null; then echo config=rw; else echo config=ro; fi
if busybox grep -q ' /mem tmpfs ' /proc/mounts; then echo mem=tmpfs; else echo mem=dir; fi
echo "env=$A_VAL/$TOKEN/$POD_NAME/$POD_NS/$NODE/$POD_IP/$LBL/$EXPANDED/$CFG_b/${MISSING-unset}"
echo "arg=$0"
exec busybox sleep 3600`, "arg-$(POD_NAME)"}
	reader.VolumeMounts = []corev1.VolumeMount{
		{Name: "shared", MountPath: "/shared", ReadOnly: true},
		{Name: "config", MountPath: "/config"},
		{Name: "secret", MountPath: "/secret"},
		{Name: "mem", MountPath: "/mem"},
	}
	reader.EnvFrom = []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
	reader.Env = []corev1.EnvVar{
		{Name: "A_VAL", ValueFrom: ref(corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "a"}})},
		{Name: "TOKEN", ValueFrom: ref(corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "token"}})},
		{Name: "MISSING", ValueFrom: ref(corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: &yes}})},
		{Name: "POD_NAME", ValueFrom: field("metadata.name")},
		{Name: "POD_NS", ValueFrom: field("metadata.namespace")},
		{Name: "NODE", ValueFrom: field("spec.nodeName")},
		{Name: "POD_IP", ValueFrom: field("status.podIP")},
		{Name: "LBL", ValueFrom: field("metadata.labels['app']")},
		{Name: "EXPANDED", Value: "$(POD_NAME)-x"},
	}
	pod.Spec.Containers = []corev1.Container{writer, reader}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var p *corev1.Pod
	waitFor(t, time.Minute, "pod Running", func(ctx context.Context) (bool, error) {
		var err error
		p, err = getPod(ctx, cs, "vols")
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", nil
	})
	logPath := dir + "/pods/default_vols_" + string(p.UID) + "/reader/0.log"
	var log string
	waitFor(t, 30*time.Second, "reader output", func(context.Context) (bool, error) {
		b, _ := os.ReadFile(logPath)
		log = string(b)
		return strings.Contains(log, "arg="), nil
	})
	for _, want := range []string{
		"shared=from-writer/in-subpath",
		"cfg=alpha/600/sub",
		"secret=s3cret",
		"config=ro",
		"mem=tmpfs",
		"env=alpha/s3cret/vols/default/node-1/" + p.Status.PodIP + "/vols/vols-x/beta/unset",
		"arg=arg-vols",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("reader log lacks %q:\n%s", want, log)
		}
	}

	// Deleting the pod removes its volumes (and unmounts the tmpfs).
	if err := cs.CoreV1().Pods("default").Delete(ctx, "vols", metav1.DeleteOptions{GracePeriodSeconds: new(int64(1))}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "pod deleted", func(ctx context.Context) (bool, error) {
		_, err := getPod(ctx, cs, "vols")
		return apierrors.IsNotFound(err), nil
	})
	if _, err := os.Stat(dir + "/volumes/" + string(p.UID)); !os.IsNotExist(err) {
		t.Errorf("volumes of the deleted pod: %v", err)
	}

	// A container whose environment names a ConfigMap that is not there
	// waits in CreateContainerConfigError until it is.
	later := busyboxPod("later", corev1.RestartPolicyAlways, "echo $V; exec busybox sleep 3600")
	later.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", ValueFrom: ref(corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "later"}, Key: "v"}})}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, later, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "CreateContainerConfigError", func(ctx context.Context) (bool, error) {
		p, err := getPod(ctx, cs, "later")
		if err != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false, nil
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w.Reason == "CreateContainerConfigError" && strings.Contains(w.Message, `configmap "later" not found`), nil
	})
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "later"}, Data: map[string]string{"v": "1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "pod Running once the ConfigMap exists", func(ctx context.Context) (bool, error) {
		p, err := getPod(ctx, cs, "later")
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
}

func TestInitContainers(t *testing.T) {
	cs, dir := startNode(t, network.DefaultPodCIDR)
	ctx := context.Background()
	pod := busyboxPod("init", corev1.RestartPolicyNever, "busybox cat /work/order")
	pod.Spec.HostNetwork = false
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	mount := []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	pod.Spec.Containers[0].VolumeMounts = mount
	// A sidecar first: it runs alongside, and is stopped when main is done.
	always, grace := corev1.ContainerRestartPolicyAlways, int64(1)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.InitContainers = []corev1.Container{{Name: "sidecar", Image: "busybox:test", RestartPolicy: &always,
		Command: []string{"busybox", "sleep", "3600"}}}
	for _, step := range []string{"one", "two"} {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
			Name: "init-" + step, Image: "busybox:test", VolumeMounts: mount,
			Command: []string{"busybox", "sh", "-c", "busybox sleep 0.5; echo " + step + " >> /work/order"},
		})
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var p *corev1.Pod
	waitFor(t, time.Minute, "pod finished", func(ctx context.Context) (bool, error) {
		var err error
		p, err = getPod(ctx, cs, "init")
		return err == nil && terminalPhase(p.Status.Phase), nil
	})
	if p.Status.Phase != corev1.PodSucceeded || len(p.Status.InitContainerStatuses) != 3 {
		t.Fatalf("status = %+v", p.Status)
	}
	if st := p.Status.InitContainerStatuses[0]; st.State.Terminated == nil {
		t.Errorf("sidecar not stopped: %+v", st)
	}
	for _, st := range p.Status.InitContainerStatuses[1:] {
		if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 || !st.Ready {
			t.Errorf("init container %s: %+v", st.Name, st)
		}
	}
	b, _ := os.ReadFile(dir + "/pods/default_init_" + string(p.UID) + "/main/0.log")
	if !strings.Contains(string(b), "one") || !strings.Contains(string(b), "two") || strings.Index(string(b), "one") > strings.Index(string(b), "two") {
		t.Errorf("main log:\n%s", b)
	}

	// A failing init container with restartPolicy Never fails the pod
	// without running the others.
	bad := busyboxPod("badinit", corev1.RestartPolicyNever, "echo never")
	bad.Spec.InitContainers = []corev1.Container{{Name: "fail", Image: "busybox:test", Command: []string{"busybox", "sh", "-c", "exit 3"}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "pod Failed", func(ctx context.Context) (bool, error) {
		var err error
		p, err = getPod(ctx, cs, "badinit")
		return err == nil && p.Status.Phase == corev1.PodFailed, nil
	})
	if st := p.Status.InitContainerStatuses[0]; st.State.Terminated == nil || st.State.Terminated.ExitCode != 3 {
		t.Errorf("init status = %+v", st)
	}
	if st := p.Status.ContainerStatuses[0]; st.State.Waiting == nil || st.State.Waiting.Reason != "PodInitializing" {
		t.Errorf("container status = %+v", st)
	}
}

func TestProbes(t *testing.T) {
	cs, _ := startNode(t, "") // the pod CIDR comes from the node IPAM controller
	ctx := context.Background()
	pod := busyboxPod("probed", corev1.RestartPolicyAlways,
		"busybox sleep 2; busybox touch /tmp/ready; busybox sleep 4; busybox touch /tmp/dead; exec busybox sleep 3600")
	pod.Spec.HostNetwork = false
	grace := int64(1)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	c := &pod.Spec.Containers[0]
	c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
		Exec: &corev1.ExecAction{Command: []string{"busybox", "test", "-f", "/tmp/ready"}}}}
	c.LivenessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1, ProbeHandler: corev1.ProbeHandler{
		Exec: &corev1.ExecAction{Command: []string{"busybox", "test", "!", "-f", "/tmp/dead"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var sawUnready bool
	waitFor(t, time.Minute, "container ready by its readiness probe", func(ctx context.Context) (bool, error) {
		p, err := getPod(ctx, cs, "probed")
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, nil
		}
		st := p.Status.ContainerStatuses[0]
		if st.State.Running != nil && !st.Ready && st.RestartCount == 0 {
			sawUnready = true
		}
		return st.Ready && st.RestartCount == 0, nil
	})
	if !sawUnready {
		t.Error("the container was never seen running but not ready")
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := getPod(ctx, cs, "probed")
	if err != nil {
		t.Fatal(err)
	}
	if cidr, err := netip.ParsePrefix(node.Spec.PodCIDR); err != nil || !cidr.Contains(netip.MustParseAddr(p.Status.PodIP)) {
		t.Errorf("pod IP %q not in the node's pod CIDR %q", p.Status.PodIP, node.Spec.PodCIDR)
	}
	waitFor(t, time.Minute, "restart by the liveness probe", func(ctx context.Context) (bool, error) {
		p, err := getPod(ctx, cs, "probed")
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, nil
		}
		st := p.Status.ContainerStatuses[0]
		return st.RestartCount >= 1 && st.LastTerminationState.Terminated != nil, nil
	})
}

// freePort is a TCP port free on loopback now.
func freePort(t *testing.T) int32 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// httpGet is the body of a GET of u, or "" on any failure.
func httpGet(ctx context.Context, u string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return ""
	}
	// No proxy from the environment: the request goes to the address.
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func terminalPhase(p corev1.PodPhase) bool { return p == corev1.PodSucceeded || p == corev1.PodFailed }
