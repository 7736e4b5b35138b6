package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"plainkube.dev/plainkube/internal/kubelet"
	"plainkube.dev/plainkube/internal/kubelet/network"
)

// readSeen reads a file a container copies out of its volumes into the
// emptyDir "out" (so what it sees is checked from inside the container).
func readSeen(dir string, uid types.UID, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "volumes", string(uid), "out", name))
	return string(b)
}

// outVolume is an emptyDir the test reads back from the host.
var outVolume = corev1.Volume{Name: "out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}

// copyLoop is a container script that writes the output of each command
// to /out/<name> every 0.2s (through a temporary file, so that a read
// never sees half); a command that is a path is "busybox cat <path>".
func copyLoop(cmds map[string]string) string {
	var b strings.Builder
	b.WriteString("while true; do ")
	for name, cmd := range cmds {
		if strings.HasPrefix(cmd, "/") {
			cmd = "busybox cat " + cmd
		}
		b.WriteString(cmd + " > /out/." + name + " 2>&1; busybox mv /out/." + name + " /out/" + name + "; ")
	}
	b.WriteString("busybox sleep 0.2; done")
	return b.String()
}

func createPod(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod) {
	t.Helper()
	if _, err := cs.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitRunning(t *testing.T, cs kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	waitFor(t, time.Minute, name+" Running", func(ctx context.Context) (bool, error) {
		var err error
		p, err = getPod(ctx, cs, name)
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	return p
}

func TestVolumeUpdates(t *testing.T) {
	cs, dir := startNodeWith(t, network.DefaultPodCIDR, func(o *kubelet.Options) { o.VolumeResyncInterval = time.Second })
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")

	t.Run("configMap and downwardAPI updates reach a running container", func(t *testing.T) {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"},
			Data: map[string]string{"k": "v1", "gone": "soon"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := busyboxPod("live", corev1.RestartPolicyAlways, copyLoop(map[string]string{
			"k": "/cfg/k", "sub": "/sub-k", "ls": "busybox ls /cfg/", "labels": "/info/labels", "note": "/info/note"}))
		pod.Labels = map[string]string{"app": "live"}
		pod.Annotations = map[string]string{"note": "one"}
		pod.Spec.Volumes = []corev1.Volume{outVolume,
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "live"}}}},
			{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "note", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['note']"}},
			}}}},
		}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "out", MountPath: "/out"}, {Name: "cfg", MountPath: "/cfg"},
			{Name: "cfg", MountPath: "/sub-k", SubPath: "k"}, {Name: "info", MountPath: "/info"}}
		createPod(t, cs, pod)
		p := waitRunning(t, cs, "live")
		waitFor(t, 20*time.Second, "first content", func(context.Context) (bool, error) {
			return readSeen(dir, p.UID, "k") == "v1" && readSeen(dir, p.UID, "labels") == `app="live"` && readSeen(dir, p.UID, "note") == "one", nil
		})
		if got := readSeen(dir, p.UID, "ls"); got != "gone\nk\n" {
			t.Errorf("ls /cfg = %q", got)
		}

		cm, err := cms.Get(ctx, "live", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{"k": "v2", "new": "n"}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		waitFor(t, 15*time.Second, "the update inside the container", func(context.Context) (bool, error) {
			return readSeen(dir, p.UID, "k") == "v2" && readSeen(dir, p.UID, "ls") == "k\nnew\n", nil
		})
		t.Logf("configMap update seen after %v", time.Since(start).Round(100*time.Millisecond))
		// A subPath mount keeps what it had when the container started.
		if got := readSeen(dir, p.UID, "sub"); got != "v1" {
			t.Errorf("subPath mount = %q, want the old v1", got)
		}

		p.Labels["tier"] = "x"
		p.Annotations["note"] = "two"
		if _, err := cs.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 15*time.Second, "label and annotation updates inside the container", func(context.Context) (bool, error) {
			return readSeen(dir, p.UID, "labels") == "app=\"live\"\ntier=\"x\"" && readSeen(dir, p.UID, "note") == "two", nil
		})
		// Files are links into ..data, as upstream lays them out.
		if l, err := os.Readlink(filepath.Join(dir, "volumes", string(p.UID), "cfg", "k")); err != nil || l != "..data/k" {
			t.Errorf("cfg/k -> %q (%v)", l, err)
		}
	})

	t.Run("projected volume, downwardAPI files, secret on tmpfs", func(t *testing.T) {
		if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "proj"},
			Data: map[string][]byte{"pw": []byte("s3cret")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "proj"},
			Data: map[string]string{"ca.crt": "CERT"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mode := int32(0o440)
		yes := true
		pod := busyboxPod("proj", corev1.RestartPolicyAlways, copyLoop(map[string]string{
			"pw": "/p/creds/pw", "ca": "/p/ca.crt", "ns": "/p/namespace", "mem": "/p/mem_mi", "name": "/d/name",
			"svc": "echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"}))
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}
		pod.Spec.Volumes = []corev1.Volume{outVolume,
			{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj"}, Items: []corev1.KeyToPath{{Key: "pw", Path: "creds/pw"}}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &yes}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
					{Path: "mem_mi", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
				}}},
			}}}},
			{Name: "d", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
			{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: new(resource.MustParse("8Mi"))}}},
		}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "out", MountPath: "/out"}, {Name: "p", MountPath: "/p"},
			{Name: "d", MountPath: "/d"}, {Name: "mem", MountPath: "/mem"}}
		createPod(t, cs, pod)
		p := waitRunning(t, cs, "proj")
		kube, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"pw": "s3cret", "ca": "CERT", "ns": "default", "mem": "128", "name": "proj",
			"svc": fmt.Sprintf("%s:%d\n", kube.Spec.ClusterIP, kube.Spec.Ports[0].Port)}
		waitFor(t, 20*time.Second, "projected files", func(context.Context) (bool, error) {
			for k, v := range want {
				if readSeen(dir, p.UID, k) != v {
					return false, nil
				}
			}
			return true, nil
		})
		if t.Failed() {
			for k := range want {
				t.Logf("%s = %q", k, readSeen(dir, p.UID, k))
			}
		}
		fi, err := os.Stat(filepath.Join(dir, "volumes", string(p.UID), "p", "creds", "pw"))
		if err != nil || fi.Mode().Perm() != 0o440 {
			t.Errorf("creds/pw mode %v (%v), want 0440", fi.Mode(), err)
		}
		mounts, _ := os.ReadFile("/proc/self/mounts")
		vols := filepath.Join(dir, "volumes", string(p.UID))
		for _, line := range strings.Split(string(mounts), "\n") {
			if f := strings.Fields(line); len(f) > 3 && f[1] == vols+"/mem" && !strings.Contains(f[3], "size=8192k") {
				t.Errorf("memory emptyDir mount options %q, want size=8192k", f[3])
			}
		}
		for _, v := range []string{"p", "d", "mem"} {
			if !strings.Contains(string(mounts), " "+vols+"/"+v+" tmpfs ") {
				t.Errorf("volume %s is not on a tmpfs", v)
			}
		}
		if strings.Contains(string(mounts), " "+vols+"/out tmpfs ") {
			t.Error("a disk emptyDir is on a tmpfs")
		}
	})

	t.Run("a missing configMap fails the mount until it exists", func(t *testing.T) {
		pod := busyboxPod("late", corev1.RestartPolicyAlways, "exec busybox sleep 3600")
		pod.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "late-cm"}}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
		createPod(t, cs, pod)
		wantMsg := `MountVolume.SetUp failed for volume "cfg" : configmap "late-cm" not found`
		waitFor(t, 20*time.Second, "FailedMount event", func(ctx context.Context) (bool, error) {
			evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.Name == "late" && e.Reason == "FailedMount" {
					if e.Message != wantMsg || e.Type != corev1.EventTypeWarning || e.Source.Component != "kubelet" || e.Source.Host != "node-1" {
						t.Errorf("event = %s %s %q from %+v", e.Type, e.Reason, e.Message, e.Source)
					}
					return true, nil
				}
			}
			return false, nil
		})
		var p *corev1.Pod
		waitFor(t, 10*time.Second, "Pending, ContainerCreating", func(ctx context.Context) (bool, error) {
			var err error
			p, err = getPod(ctx, cs, "late")
			return err == nil && len(p.Status.ContainerStatuses) == 1, nil
		})
		if p.Status.Phase != corev1.PodPending || p.Status.ContainerStatuses[0].State.Waiting == nil ||
			p.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
			t.Errorf("status while the mount fails: %s %+v", p.Status.Phase, p.Status.ContainerStatuses)
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late-cm"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, cs, "late")
	})

	t.Run("service account token", func(t *testing.T) {
		exp := int64(3600)
		pod := busyboxPod("tok", corev1.RestartPolicyAlways, copyLoop(map[string]string{"token": "/sa/token"}))
		pod.Spec.ServiceAccountName = "default"
		pod.Spec.Volumes = []corev1.Volume{outVolume, {Name: "sa", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}}}}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "out", MountPath: "/out"}, {Name: "sa", MountPath: "/sa"}}
		createPod(t, cs, pod)
		// Where the API server issues tokens the container reads one;
		// where it does not yet, the mount fails as upstream reports it.
		waitFor(t, 30*time.Second, "a token or a FailedMount event", func(ctx context.Context) (bool, error) {
			if p, err := getPod(ctx, cs, "tok"); err == nil && p.Status.Phase == corev1.PodRunning {
				return len(readSeen(dir, p.UID, "token")) > 20, nil
			}
			evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.Name == "tok" && e.Reason == "FailedMount" {
					if !strings.HasPrefix(e.Message, `MountVolume.SetUp failed for volume "sa" : failed to fetch token: `) {
						t.Errorf("event message %q", e.Message)
					}
					t.Logf("FailedMount: %s", e.Message)
					return true, nil
				}
			}
			return false, nil
		})
	})

	t.Run("disk emptyDir over its sizeLimit evicts the pod", func(t *testing.T) {
		pod := busyboxPod("hog", corev1.RestartPolicyAlways, "busybox dd if=/dev/zero of=/scratch/fill bs=1024 count=2048; exec busybox sleep 3600")
		pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: new(resource.MustParse("1Mi"))}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		createPod(t, cs, pod)
		var p *corev1.Pod
		waitFor(t, 30*time.Second, "pod evicted", func(ctx context.Context) (bool, error) {
			var err error
			p, err = getPod(ctx, cs, "hog")
			return err == nil && p.Status.Phase == corev1.PodFailed, nil
		})
		if want := `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `; p.Status.Reason != "Evicted" || p.Status.Message != want {
			t.Errorf("reason %q message %q", p.Status.Reason, p.Status.Message)
		}
		// Stopped with upstream's 1s grace period, not the pod's 5s (sh
		// ignores SIGTERM).
		waitFor(t, 4*time.Second, "container stopped", func(ctx context.Context) (bool, error) {
			p, err := getPod(ctx, cs, "hog")
			return err == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil, nil
		})
	})
}

// boundClaim makes a PersistentVolume and a claim bound to it as the PV
// controller leaves them (claimRef, volumeName, bind-completed, phase
// Bound), the volume on node-1, and returns the claim. With pending, only
// the claim is made (naming a volume that does not exist yet, which no
// binder can complete) and bind makes the volume and completes it.
func boundClaim(t *testing.T, cs kubernetes.Interface, name string, src corev1.PersistentVolumeSource, mode corev1.PersistentVolumeMode, annotations map[string]string, pending bool) (claim *corev1.PersistentVolumeClaim, bind func()) {
	t.Helper()
	ctx := context.Background()
	claim, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv-" + name, VolumeMode: &mode,
			StorageClassName: new(string),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bind = func() {
		makeVolume(t, cs, name, claim, src, mode, annotations)
		markBound(t, cs, claim)
	}
	if pending {
		return claim, bind
	}
	bind()
	return claim, bind
}

func makeVolume(t *testing.T, cs kubernetes.Interface, name string, claim *corev1.PersistentVolumeClaim, src corev1.PersistentVolumeSource, mode corev1.PersistentVolumeMode, annotations map[string]string) {
	t.Helper()
	if _, err := cs.CoreV1().PersistentVolumes().Create(context.Background(), &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name, Annotations: annotations},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: &mode,
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: name, UID: claim.UID},
			PersistentVolumeSource: src,
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}},
			}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// markBound sets the claim's phase Bound, as the PV controller does (which
// may run in the test's server and get there first).
func markBound(t *testing.T, cs kubernetes.Interface, claim *corev1.PersistentVolumeClaim) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), claim.Name, metav1.GetOptions{})
		if err != nil || c.Status.Phase == corev1.ClaimBound {
			return err
		}
		c.Status.Phase = corev1.ClaimBound
		_, err = cs.CoreV1().PersistentVolumeClaims("default").UpdateStatus(context.Background(), c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

// TestPersistentVolumeClaims: the agent mounts the hostPath or local
// volume a pod's claim is bound to, waits (FailedMount) while the claim
// is not bound, keeps the data across pod re-creation, applies fsGroup to
// local volumes, honours readOnly and subPath, and refuses Block volumes.
func TestPersistentVolumeClaims(t *testing.T) {
	cs, dir := startNodeWith(t, network.DefaultPodCIDR, nil)
	ctx := context.Background()
	hostDir := filepath.Join(dir, "storage", "pvc-host")
	_, bind := boundClaim(t, cs, "host", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
		Path: hostDir, Type: ptrTo(corev1.HostPathDirectoryOrCreate)}}, corev1.PersistentVolumeFilesystem,
		map[string]string{"pv.kubernetes.io/provisioned-by": "plainkube.dev/local-path"}, true)

	writer := busyboxPod("writer", corev1.RestartPolicyAlways,
		"echo one > /data/f; busybox mkdir -p /data/sub; echo two > /sub/g; "+
			"(echo x > /ro/x && echo writable || echo read-only) > /data/ro; busybox sleep 3600")
	writer.Spec.NodeName = "node-1"
	writer.Spec.Volumes = []corev1.Volume{claimVolume("data", "host")}
	writer.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/sub", SubPath: "sub"}, {Name: "data", MountPath: "/ro", ReadOnly: true}}
	createPod(t, cs, writer)
	expectEvent(t, cs, "writer", "FailedMount", "error processing PVC default/host: PVC is not bound")
	if p, _ := getPod(ctx, cs, "writer"); p.Status.Phase != corev1.PodPending {
		t.Fatalf("pod with an unbound claim is %s", p.Status.Phase)
	}
	bind()
	waitRunning(t, cs, "writer")
	waitFor(t, 20*time.Second, "the files on the volume", func(context.Context) (bool, error) {
		f, _ := os.ReadFile(filepath.Join(hostDir, "f"))
		g, _ := os.ReadFile(filepath.Join(hostDir, "sub", "g"))
		ro, _ := os.ReadFile(filepath.Join(hostDir, "ro"))
		return string(f) == "one\n" && string(g) == "two\n" && string(ro) == "read-only\n", nil
	})
	if fi, err := os.Stat(hostDir); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("local-path folder: %v %v, want mode 0777", fi, err)
	}

	// The pod goes and comes back: the data is where it was.
	if err := cs.CoreV1().Pods("default").Delete(ctx, "writer", metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(1))}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "writer gone", func(ctx context.Context) (bool, error) {
		_, err := getPod(ctx, cs, "writer")
		return err != nil, nil
	})
	reader := busyboxPod("reader", corev1.RestartPolicyAlways, "busybox cat /data/f > /data/seen; busybox sleep 3600")
	reader.Spec.Volumes = []corev1.Volume{claimVolume("data", "host")}
	reader.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	createPod(t, cs, reader) // scheduled: its claim is bound
	waitRunning(t, cs, "reader")
	waitFor(t, 20*time.Second, "the re-created pod reading the old file", func(context.Context) (bool, error) {
		b, _ := os.ReadFile(filepath.Join(hostDir, "seen"))
		return string(b) == "one\n", nil
	})

	// A local volume gets the pod's fsGroup.
	localDir := filepath.Join(dir, "local-disk")
	if err := os.MkdirAll(localDir, 0o755); err != nil {
		t.Fatal(err)
	}
	boundClaim(t, cs, "local", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: localDir}}, corev1.PersistentVolumeFilesystem, nil, false)
	grouped := busyboxPod("grouped", corev1.RestartPolicyAlways, "echo hi > /data/h; busybox sleep 3600")
	gid := int64(4321)
	grouped.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &gid}
	grouped.Spec.Volumes = []corev1.Volume{claimVolume("data", "local")}
	grouped.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	createPod(t, cs, grouped)
	waitRunning(t, cs, "grouped")
	var st syscall.Stat_t
	if err := syscall.Stat(localDir, &st); err != nil || st.Gid != uint32(gid) || st.Mode&syscall.S_ISGID == 0 {
		t.Errorf("local volume root: gid %d mode %o (%v), want gid %d with setgid", st.Gid, st.Mode, err, gid)
	}

	// A Block volume is refused with a clear event.
	boundClaim(t, cs, "raw", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/dev/null"}}, corev1.PersistentVolumeBlock, nil, false)
	block := busyboxPod("block", corev1.RestartPolicyAlways, "busybox sleep 3600")
	block.Spec.Volumes = []corev1.Volume{claimVolume("raw", "raw")}
	createPod(t, cs, block)
	expectEvent(t, cs, "block", "FailedMount", `MountVolume.SetUp failed for volume "raw" : volumeMode Block is not supported`)
}

func ptrTo[T any](v T) *T { return &v }

// TestImageVolume: an image volume is the image's root file system,
// read-only, whole or by subPath; a pod whose volume image the node does
// not have waits with FailedMount; a deleted pod's image mount and its
// containerd snapshot are gone.
func TestImageVolume(t *testing.T) {
	cs, dir := startNodeWith(t, network.DefaultPodCIDR, nil)
	ctx := context.Background()
	imageVolume := func(ref string) corev1.Volume {
		return corev1.Volume{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: ref, PullPolicy: corev1.PullAlways}}}
	}

	missing := busyboxPod("missing", corev1.RestartPolicyAlways, "busybox sleep 3600")
	missing.Spec.Volumes = []corev1.Volume{imageVolume("example.com/absent:1")}
	missing.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "img", MountPath: "/img"}}
	createPod(t, cs, missing)

	pod := busyboxPod("reader", corev1.RestartPolicyAlways, copyLoop(map[string]string{
		"ls": "busybox ls /img/bin", "sub": "busybox ls /sub", "write": "busybox touch /img/x && echo writable || echo read-only"}))
	pod.Spec.Volumes = []corev1.Volume{imageVolume("busybox:test"), outVolume}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "img", MountPath: "/img"},
		{Name: "img", MountPath: "/sub", SubPath: "bin"}, {Name: "out", MountPath: "/out"}}
	createPod(t, cs, pod)
	p := waitRunning(t, cs, "reader")
	waitFor(t, 20*time.Second, "what the container sees of the image", func(context.Context) (bool, error) {
		return readSeen(dir, p.UID, "ls") == "busybox\necho\nsh\nsleep\n" && readSeen(dir, p.UID, "sub") == readSeen(dir, p.UID, "ls") &&
			strings.HasSuffix(readSeen(dir, p.UID, "write"), "read-only\n"), nil
	})

	expectEvent(t, cs, "missing", "FailedMount", `image "example.com/absent:1" is not present on the node`)
	if p, _ := getPod(ctx, cs, "missing"); p.Status.Phase != corev1.PodPending {
		t.Fatalf("pod with a missing volume image is %s", p.Status.Phase)
	}

	mountDir := filepath.Join(dir, "volumes", string(p.UID), "img")
	if err := cs.CoreV1().Pods("default").Delete(ctx, "reader", metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(1))}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the image volume removed", func(context.Context) (bool, error) {
		_, err := os.Stat(mountDir)
		return os.IsNotExist(err), nil
	})
	out, err := exec.Command("ctr", "-a", filepath.Join(dir, "containerd", "containerd.sock"), "-n", "k8s.io",
		"snapshots", "--snapshotter", "overlayfs", "ls").CombinedOutput()
	if err != nil || strings.Contains(string(out), mountDir) {
		t.Fatalf("the image volume's snapshot is left: %v\n%s", err, out)
	}
}
