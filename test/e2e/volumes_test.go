package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPersistentVolumes walks issue #22's storage checks on a real node
// with the real kubectl: a claim's data outlives its pod, a StatefulSet's
// pods come up in order and keep their own claims across deletion,
// scale-down and scale-up, a bound claim of a class that does not allow
// expansion cannot grow, and deleting a claim whose volume is reclaimed
// with Delete removes the volume's folder.
//
// "static" binds hand-made hostPath volumes (a WaitForFirstConsumer class
// without a provisioner: the scheduler's VolumeBinding plugin picks the
// volume, the PV controller completes the binding). "default class" uses
// the built-in local-path StorageClass, whose provisioner makes the
// volume on the node the scheduler picked.
func TestPersistentVolumes(t *testing.T) {
	requireRealNode(t)
	c := startCluster(t, "--enable-node", "--cluster-cidr", "10.122.0.0/16")
	c.eventually([]string{"Ready"}, "get", "nodes")
	buildBusybox(t, c.dataDir, "sh,echo,sleep,cat,hostname,wc,ls")
	t.Cleanup(func() {
		c.run("delete", "statefulset", "--all", "--wait=false")
		c.run("delete", "pod", "--all", "--wait=false")
		c.eventually([]string{"No resources found"}, "get", "pods")
	})
	node := strings.TrimSpace(c.mustStdout("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"))

	t.Run("static", func(t *testing.T) {
		c := c.forTest(t)
		c.must("apply", "-f", writeFile(t, t.TempDir(), "class.yaml", `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: manual}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
`))
		disks := t.TempDir()
		var pvs strings.Builder
		for _, name := range []string{"pv-one", "pv-db-0", "pv-db-1", "pv-db-2"} {
			fmt.Fprintf(&pvs, `---
apiVersion: v1
kind: PersistentVolume
metadata: {name: %s}
spec:
  storageClassName: manual
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: %s, type: DirectoryOrCreate}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [%s]}
`, name, filepath.Join(disks, name), node)
		}
		c.must("apply", "-f", writeFile(t, t.TempDir(), "pvs.yaml", pvs.String()))

		checkClaimOutlivesPod(t, c, "manual")
		pv := strings.TrimSpace(c.mustStdout("get", "pvc", "note", "-o", "jsonpath={.spec.volumeName}"))
		if b, err := os.ReadFile(filepath.Join(disks, pv, "note")); err != nil || string(b) != "written once\n" {
			t.Errorf("the file in volume %s's folder: %q %v", pv, b, err)
		}
		// The default-class check makes a claim of the same name.
		c.must("delete", "pvc", "note", "--timeout=60s")
		checkStatefulSet(t, c, "db", "manual")
	})

	t.Run("default class", func(t *testing.T) {
		c := c.forTest(t)
		checkClaimOutlivesPod(t, c, "")
		out := c.mustStdout("get", "pvc", "note", "-o", "jsonpath={.spec.storageClassName} {.spec.volumeName}")
		if !strings.HasPrefix(out, "local-path pvc-") {
			t.Errorf("default-class claim: %q", out)
		}
		// local-path cannot expand a volume: its class does not allow it,
		// and PersistentVolumeClaimResize refuses to grow a bound claim.
		out = c.mustFail("patch", "pvc", "note", "--type=merge", "-p", `{"spec":{"resources":{"requests":{"storage":"200Mi"}}}}`)
		contains(t, out, `persistentvolumeclaims "note" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`)
		if got := c.mustStdout("get", "pvc", "note", "-o", "jsonpath={.spec.resources.requests.storage}"); got != "100Mi" {
			t.Errorf("the refused resize changed the request to %q", got)
		}
		checkStatefulSet(t, c, "web", "")
		checkDeleteReclaimRemovesFolder(t, c, "data-web-2")
	})
}

// checkDeleteReclaimRemovesFolder: claim's local-path volume (reclaim
// policy Delete) has a folder on this host; deleting the claim deletes
// the volume and the folder.
func checkDeleteReclaimRemovesFolder(t *testing.T, c *cluster, claim string) {
	pv := strings.TrimSpace(c.mustStdout("get", "pvc", claim, "-o", "jsonpath={.spec.volumeName}"))
	out := c.mustStdout("get", "pv", pv, "-o", "jsonpath={.spec.persistentVolumeReclaimPolicy} {.spec.hostPath.path}")
	policy, folder, _ := strings.Cut(out, " ")
	if policy != "Delete" || !strings.HasPrefix(folder, c.dataDir+"/") {
		t.Fatalf("volume %s of claim %s: reclaim policy and folder %q", pv, claim, out)
	}
	if _, err := os.Stat(filepath.Join(folder, "id")); err != nil {
		t.Fatalf("the volume's folder holds no data before the claim is deleted: %v", err)
	}
	c.must("delete", "pvc", claim, "--timeout=60s")
	c.eventually([]string{"NotFound"}, "get", "pv", pv)
	if _, err := os.Stat(folder); !os.IsNotExist(err) {
		t.Errorf("folder %s after its volume was deleted: %v", folder, err)
	}
}

// forTest is c reporting to t (a subtest).
func (c *cluster) forTest(t *testing.T) *cluster {
	sub := *c
	sub.t = t
	return &sub
}

// storageClassLine is the claim spec's storageClassName line for class
// ("" leaves it out: the default class).
func storageClassLine(class, indent string) string {
	if class == "" {
		return ""
	}
	return indent + "storageClassName: " + class + "\n"
}

// checkClaimOutlivesPod: a pod writes a file to its claim's volume; the
// pod is deleted and created again, and the file is there.
func checkClaimOutlivesPod(t *testing.T, c *cluster, class string) {
	dir := t.TempDir()
	c.must("apply", "-f", writeFile(t, dir, "claim.yaml", `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: note}
spec:
`+storageClassLine(class, "  ")+`  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 100Mi}}
`))
	pod := writeFile(t, dir, "pod.yaml", `apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: note}}
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "[ -f /data/note ] || echo written once > /data/note; echo started >> /data/starts; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
`)
	c.must("apply", "-f", pod)
	c.eventually([]string{"Bound"}, "get", "pvc", "note")
	c.eventually([]string{"Running"}, "get", "pod", "writer")
	waitFor(t, 30*time.Second, "the note written", func() (bool, string) {
		out, _ := c.run("exec", "writer", "--", "cat", "/data/note")
		return strings.TrimSpace(out) == "written once", out
	})
	c.must("delete", "pod", "writer", "--timeout=60s")
	c.must("apply", "-f", pod)
	c.eventually([]string{"Running"}, "get", "pod", "writer")
	waitFor(t, 30*time.Second, "the note and two starts after re-creation", func() (bool, string) {
		out, _ := c.run("exec", "writer", "--", "sh", "-c", "cat /data/note; wc -l < /data/starts")
		return strings.Join(strings.Fields(out), " ") == "written once 2", out
	})
	c.must("delete", "pod", "writer", "--timeout=60s")
}

// checkStatefulSet: a StatefulSet of 3 with a volume template comes up in
// order, each pod keeps its own data across deletion, scaling to 1 keeps
// claims 1 and 2 (Retain), and scaling back to 3 reuses them.
func checkStatefulSet(t *testing.T, c *cluster, name, class string) {
	c.must("apply", "-f", writeFile(t, t.TempDir(), "set.yaml", fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %[1]s}
spec:
  clusterIP: None
  selector: {app: %[1]s}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: %[1]s}
spec:
  serviceName: %[1]s
  replicas: 3
  selector: {matchLabels: {app: %[1]s}}
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Retain, whenScaled: Retain}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:e2e
        imagePullPolicy: Never
        command: ["sh", "-c", "[ -f /data/id ] || hostname > /data/id; echo started >> /data/starts; sleep 3600"]
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
%[2]s      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 100Mi}}
`, name, storageClassLine(class, "      "))))
	c.must("rollout", "status", "statefulset/"+name, "--timeout=180s")
	// In order: each pod was created once the one before was Ready (the
	// times are RFC 3339 in UTC, to the second: they compare as strings).
	for i := 1; i < 3; i++ {
		created := c.mustStdout("get", "pod", fmt.Sprintf("%s-%d", name, i), "-o", "jsonpath={.metadata.creationTimestamp}")
		ready := c.mustStdout("get", "pod", fmt.Sprintf("%s-%d", name, i-1), "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].lastTransitionTime}`)
		if created == "" || ready == "" || created < ready {
			t.Errorf("%s-%d created at %q, before %s-%d was Ready (%q)", name, i, created, name, i-1, ready)
		}
	}
	starts := func(i int, want string) {
		t.Helper()
		pod := fmt.Sprintf("%s-%d", name, i)
		waitFor(t, 60*time.Second, pod+"'s data", func() (bool, string) {
			out, _ := c.run("exec", pod, "--", "sh", "-c", "cat /data/id; wc -l < /data/starts")
			return strings.Join(strings.Fields(out), " ") == pod+" "+want, out
		})
	}
	for i := range 3 {
		starts(i, "1")
	}
	for i := range 3 {
		c.eventually([]string{"Bound"}, "get", "pvc", fmt.Sprintf("data-%s-%d", name, i))
	}

	// A deleted pod comes back to its own data.
	c.must("delete", "pod", name+"-1", "--timeout=60s")
	c.must("rollout", "status", "statefulset/"+name, "--timeout=120s")
	starts(1, "2")

	// Scale to 1: the claims of 1 and 2 stay; back to 3: they are reused.
	c.must("scale", "statefulset", name, "--replicas=1")
	waitFor(t, 60*time.Second, "scale-down to 1", func() (bool, string) {
		out, _ := c.run("get", "pods", "-l", "app="+name, "-o", "name")
		return strings.TrimSpace(out) == "pod/"+name+"-0", out
	})
	for i := 1; i < 3; i++ {
		c.must("get", "pvc", fmt.Sprintf("data-%s-%d", name, i))
	}
	c.must("scale", "statefulset", name, "--replicas=3")
	c.must("rollout", "status", "statefulset/"+name, "--timeout=120s")
	starts(1, "3")
	starts(2, "2")
	c.must("delete", "statefulset", name, "--timeout=60s")
}
