package kubelet_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"plainkube.dev/plainkube/internal/kubelet/network"
)

// TestLifecycle runs, on one node, pods for each lifecycle feature at
// once, then checks each: hooks, startup probes, termination messages,
// activeDeadlineSeconds, security contexts, memory limits, /etc/hosts,
// events, a command that does not exist, and the node's images.
func TestLifecycle(t *testing.T) {
	cs, dir := startNode(t, network.DefaultPodCIDR)
	ctx := context.Background()

	// A server on loopback for an httpGet preStop hook of a host-network pod.
	var preStopHits atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/prestop" {
			preStopHits.Add(1)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	hostDir := filepath.Join(dir, "hooks")
	if err := os.MkdirAll(hostDir, 0o777); err != nil {
		t.Fatal(err)
	}
	dirType := corev1.HostPathDirectory
	create := func(p *corev1.Pod) {
		t.Helper()
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	podNet := func(p *corev1.Pod) *corev1.Pod { p.Spec.HostNetwork = false; return p }

	// preStop: an exec hook writing to a hostPath, and an httpGet hook to
	// the test's server; the main process ignores SIGTERM, so it is
	// killed when the grace period (4s) ends.
	hooked := busyboxPod("hooked", corev1.RestartPolicyAlways, "exec busybox sleep 3600")
	grace := int64(4)
	hooked.Spec.TerminationGracePeriodSeconds = &grace
	hooked.Spec.Volumes = []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: &dirType}}}}
	hooked.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "out", MountPath: "/out"}}
	hooked.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"busybox", "sh", "-c", "echo post > /tmp/post; busybox sleep 1"}}},
		PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"busybox", "sh", "-c", "busybox cat /tmp/post > /out/prestop"}}},
	}
	web := hooked.Spec.Containers[0]
	web.Name = "web"
	web.VolumeMounts = nil
	web.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
		Host: "127.0.0.1", Port: intstr.FromInt(port), Path: "/prestop"}}}
	hooked.Spec.Containers = append(hooked.Spec.Containers, web)
	create(hooked)

	// A failing postStart hook kills the container, which restarts.
	badHook := busyboxPod("bad-hook", corev1.RestartPolicyAlways, "exec busybox sleep 3600")
	badHook.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"busybox", "false"}}}}
	create(badHook)

	// Startup probes: one succeeds after 2s (the liveness probe, which
	// would fail before, waits for it), one never does.
	slow := busyboxPod("slow-start", corev1.RestartPolicyAlways, "busybox sleep 2; busybox touch /tmp/up; exec busybox sleep 3600")
	slow.Spec.Containers[0].StartupProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 10, ProbeHandler: corev1.ProbeHandler{
		Exec: &corev1.ExecAction{Command: []string{"busybox", "test", "-f", "/tmp/up"}}}}
	slow.Spec.Containers[0].LivenessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1, ProbeHandler: corev1.ProbeHandler{
		Exec: &corev1.ExecAction{Command: []string{"busybox", "test", "-f", "/tmp/up"}}}}
	create(slow)
	never := busyboxPod("never-starts", corev1.RestartPolicyAlways, "exec busybox sleep 3600")
	never.Spec.TerminationGracePeriodSeconds = new(int64(1))
	never.Spec.Containers[0].StartupProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 2, ProbeHandler: corev1.ProbeHandler{
		Exec: &corev1.ExecAction{Command: []string{"busybox", "false"}}}}
	create(never)

	// Termination messages: from the file, and from the log on error.
	create(busyboxPod("term-file", corev1.RestartPolicyNever, "echo -n all done > /dev/termination-log"))
	fallback := busyboxPod("term-log", corev1.RestartPolicyNever, "echo first; echo it broke; exit 3")
	fallback.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	create(fallback)

	// activeDeadlineSeconds.
	deadline := busyboxPod("deadline", corev1.RestartPolicyAlways, "exec busybox sleep 3600")
	deadline.Spec.ActiveDeadlineSeconds = new(int64(2))
	deadline.Spec.TerminationGracePeriodSeconds = new(int64(1))
	create(deadline)

	// Security: a user and groups; runAsNonRoot against a root image.
	user := busyboxPod("user", corev1.RestartPolicyNever, "echo uid=$(busybox id -u) gid=$(busybox id -g) groups=$(busybox id -G)")
	user.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: new(int64(1234)), RunAsGroup: new(int64(2345)), SupplementalGroups: []int64{3456}}
	create(user)
	locked := busyboxPod("locked", corev1.RestartPolicyNever,
		"(busybox touch /x 2>/dev/null && echo rootfs=rw) || echo rootfs=ro; "+
			"(busybox chown 1 /dev/termination-log 2>/dev/null && echo chown=yes) || echo chown=no; busybox grep NoNewPrivs /proc/self/status")
	locked.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: new(true), AllowPrivilegeEscalation: new(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	create(locked)
	hostPID := busyboxPod("host-pid", corev1.RestartPolicyNever, "busybox ps")
	hostPID.Spec.HostPID = true
	create(hostPID)
	nonRoot := busyboxPod("non-root", corev1.RestartPolicyNever, "true")
	nonRoot.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: new(true)}
	create(nonRoot)

	// A memory limit the container goes over.
	hog := busyboxPod("hog", corev1.RestartPolicyNever, "exec busybox tail /dev/zero")
	hog.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}}
	create(hog)

	// /etc/hosts and /etc/resolv.conf of a pod with its own network.
	hosts := podNet(busyboxPod("hosts", corev1.RestartPolicyNever, "busybox cat /etc/hosts; echo ---; busybox cat /etc/resolv.conf; busybox hostname"))
	hosts.Spec.Hostname, hosts.Spec.Subdomain = "h1", "sub"
	hosts.Spec.HostAliases = []corev1.HostAlias{{IP: "10.9.8.7", Hostnames: []string{"alias-one", "alias-two"}}}
	hosts.Spec.DNSPolicy = corev1.DNSNone
	hosts.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.53"}, Searches: []string{"example.test"}}
	create(hosts)

	// Containers sharing the pod's process namespace see each other.
	shared := podNet(busyboxPod("shared-pid", corev1.RestartPolicyNever, "exec busybox sleep 30"))
	shared.Spec.ShareProcessNamespace = new(true)
	shared.Spec.TerminationGracePeriodSeconds = new(int64(1))
	peek := shared.Spec.Containers[0]
	peek.Name = "peek"
	peek.Command = []string{"busybox", "sh", "-c", "busybox sleep 1; busybox ps"}
	shared.Spec.Containers = append(shared.Spec.Containers, peek)
	create(shared)

	// A command that does not exist.
	noCmd := busyboxPod("no-command", corev1.RestartPolicyAlways, "")
	noCmd.Spec.Containers[0].Command = []string{"/no/such/binary"}
	create(noCmd)

	logOf := func(p *corev1.Pod, container string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "pods", "default_"+p.Name+"_"+string(p.UID), container, "0.log"))
		return string(b)
	}
	wait := func(t *testing.T, name, what string, cond func(p *corev1.Pod) bool) *corev1.Pod {
		t.Helper()
		var pod *corev1.Pod
		waitFor(t, time.Minute, name+": "+what, func(ctx context.Context) (bool, error) {
			p, err := getPod(ctx, cs, name)
			if err != nil {
				return false, nil
			}
			pod = p
			return cond(p), nil
		})
		return pod
	}
	status := func(p *corev1.Pod, i int) corev1.ContainerStatus {
		if i < len(p.Status.ContainerStatuses) {
			return p.Status.ContainerStatuses[i]
		}
		return corev1.ContainerStatus{}
	}
	finished := func(p *corev1.Pod) bool { return terminalPhase(p.Status.Phase) }

	t.Run("hooks", func(t *testing.T) {
		p := wait(t, "hooked", "running", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && status(p, 0).Ready && status(p, 1).Ready
		})
		if st := status(p, 0); st.Started == nil || !*st.Started {
			t.Errorf("status: %+v", st)
		}
		start := time.Now()
		if err := cs.CoreV1().Pods("default").Delete(ctx, "hooked", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "pod deleted", func(ctx context.Context) (bool, error) {
			_, err := getPod(ctx, cs, "hooked")
			return apierrors.IsNotFound(err), nil
		})
		took := time.Since(start)
		// At least most of the 4 s grace period (the preStop hooks run and
		// the containers are given their grace), and not stuck: a bound of
		// 4 s grace + hooks + slack for a loaded 2-core CI machine (where
		// 10 s was seen twice; 5.6–9.0 s when run alone).
		t.Logf("deletion took %s", took)
		if took < 3*time.Second || took > 20*time.Second {
			t.Errorf("deletion took %s with a 4s grace period", took)
		}
		if b, err := os.ReadFile(filepath.Join(hostDir, "prestop")); err != nil || string(b) != "post\n" {
			t.Errorf("preStop exec hook output %q, %v", b, err)
		}
		if preStopHits.Load() != 1 {
			t.Errorf("preStop httpGet hook hits = %d", preStopHits.Load())
		}
		expectEvent(t, cs, "hooked", "Killing", "Stopping container main")

		wait(t, "bad-hook", "restarted after the postStart hook failed", func(p *corev1.Pod) bool { return status(p, 0).RestartCount >= 1 })
		expectEvent(t, cs, "bad-hook", "FailedPostStartHook", "PostStartHook failed")
		expectEvent(t, cs, "bad-hook", "Killing", "FailedPostStartHook")
	})

	t.Run("startup probe", func(t *testing.T) {
		p := wait(t, "slow-start", "started", func(p *corev1.Pod) bool {
			st := status(p, 0)
			return st.Started != nil && *st.Started && st.Ready
		})
		// Ready only once the startup probe succeeded, 2s after the start,
		// and without a restart by the liveness probe meanwhile.
		st := status(p, 0)
		var readyAt time.Time
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.ContainersReady {
				readyAt = c.LastTransitionTime.Time
			}
		}
		if st.RestartCount != 0 || st.State.Running == nil || readyAt.Sub(st.State.Running.StartedAt.Time) < 2*time.Second {
			t.Errorf("ready at %s; status %+v", readyAt, st)
		}
		wait(t, "never-starts", "restarted by its startup probe", func(p *corev1.Pod) bool { return status(p, 0).RestartCount >= 1 })
		expectEvent(t, cs, "never-starts", "Killing", "Container main failed startup probe, will be restarted")
		expectEvent(t, cs, "never-starts", "Unhealthy", "Startup probe failed: ")
	})

	t.Run("termination message", func(t *testing.T) {
		p := wait(t, "term-file", "finished", finished)
		if term := status(p, 0).State.Terminated; term == nil || term.Message != "all done" {
			t.Errorf("state: %+v", status(p, 0).State)
		}
		p = wait(t, "term-log", "finished", finished)
		if term := status(p, 0).State.Terminated; term == nil || term.Message != "first\nit broke\n" || term.ExitCode != 3 {
			t.Errorf("state: %+v", status(p, 0).State)
		}
	})

	t.Run("active deadline", func(t *testing.T) {
		p := wait(t, "deadline", "failed", finished)
		if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "DeadlineExceeded" ||
			p.Status.Message != "Pod was active on the node longer than the specified deadline" {
			t.Errorf("status: %s %s %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		wait(t, "deadline", "container stopped", func(p *corev1.Pod) bool { return status(p, 0).State.Terminated != nil })
	})

	t.Run("security context", func(t *testing.T) {
		p := wait(t, "user", "finished", finished)
		if log := logOf(p, "main"); !strings.Contains(log, "uid=1234 gid=2345 groups=2345 3456") {
			t.Errorf("log: %s", log)
		}
		p = wait(t, "locked", "finished", finished)
		if log := logOf(p, "main"); !strings.Contains(log, "rootfs=ro") || !strings.Contains(log, "chown=no") || !strings.Contains(log, "NoNewPrivs:\t1") {
			t.Errorf("locked log: %s", log)
		}
		p = wait(t, "host-pid", "finished", finished)
		if log := logOf(p, "main"); !strings.Contains(log, "containerd") {
			t.Errorf("host-pid does not see the host's processes: %s", log)
		}
		wait(t, "non-root", "refused", func(p *corev1.Pod) bool {
			w := status(p, 0).State.Waiting
			return w != nil && w.Reason == "CreateContainerConfigError" && strings.Contains(w.Message, "container has runAsNonRoot and image will run as root")
		})
	})

	t.Run("memory limit", func(t *testing.T) {
		p := wait(t, "hog", "finished", finished)
		if term := status(p, 0).State.Terminated; term == nil || term.Reason != "OOMKilled" {
			t.Errorf("state: %+v", status(p, 0).State)
		}
		if p.Status.QOSClass != corev1.PodQOSGuaranteed && p.Status.QOSClass != corev1.PodQOSBurstable {
			t.Errorf("qosClass %q", p.Status.QOSClass)
		}
	})

	t.Run("hosts and resolv.conf", func(t *testing.T) {
		p := wait(t, "hosts", "finished", finished)
		log := logOf(p, "main")
		for _, want := range []string{"127.0.0.1\tlocalhost", p.Status.PodIP + "\th1.sub.default.svc.cluster.local\th1",
			"10.9.8.7\talias-one\talias-two", "nameserver 10.0.0.53", "search example.test", " F h1\n"} {
			if !strings.Contains(log, want) {
				t.Errorf("output lacks %q:\n%s", want, log)
			}
		}
	})

	t.Run("shared process namespace", func(t *testing.T) {
		p := wait(t, "shared-pid", "peek finished", func(p *corev1.Pod) bool { return status(p, 1).State.Terminated != nil })
		if log := logOf(p, "peek"); !strings.Contains(log, "busybox sleep 30") {
			t.Errorf("peek saw:\n%s", log)
		}
	})

	t.Run("command not found", func(t *testing.T) {
		// The start error (RunContainerError, with the runtime's message)
		// shows until the next sync; then the back-off, the failed start
		// as the last state, and a Failed event with the message.
		p := wait(t, "no-command", "CrashLoopBackOff", func(p *corev1.Pod) bool {
			st := status(p, 0)
			return st.State.Waiting != nil && st.State.Waiting.Reason == "CrashLoopBackOff" && st.LastTerminationState.Terminated != nil
		})
		if term := status(p, 0).LastTerminationState.Terminated; !strings.Contains(term.Message, "/no/such/binary") || term.ExitCode != 128 {
			t.Errorf("last state %+v", term)
		}
		expectEvent(t, cs, "no-command", "Failed", `Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/no/such/binary"`)
	})

	t.Run("events", func(t *testing.T) {
		expectEvent(t, cs, "user", "Pulled", `Container image "busybox:test" already present on machine`)
		expectEvent(t, cs, "user", "Created", "Created container: main")
		expectEvent(t, cs, "user", "Started", "Started container main")
		expectEvent(t, cs, "no-command", "BackOff", "Back-off restarting failed container main in pod no-command_default(")
		expectEvent(t, cs, "deadline", "DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
	})

	t.Run("node images", func(t *testing.T) {
		waitFor(t, 10*time.Second, "node images", func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, img := range n.Status.Images {
				for _, name := range img.Names {
					if strings.HasSuffix(name, "busybox:test") && img.SizeBytes > 0 {
						return true, nil
					}
				}
			}
			return false, nil
		})
	})
}

// expectEvent waits for an event about pod name with reason whose
// message contains msg, from the kubelet of node-1.
func expectEvent(t *testing.T, cs kubernetes.Interface, name, reason, msg string) {
	t.Helper()
	var seen []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range evs.Items {
			if e.InvolvedObject.Name != name {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == reason && strings.Contains(e.Message, msg) && e.Source.Component == "kubelet" && e.Source.Host == "node-1" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no event %s %q of %s; its events: %q", reason, msg, name, seen)
	}
}
