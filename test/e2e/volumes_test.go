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
// with the real kubectl: a claim's data outlives its pod, and a
// StatefulSet's pods keep their own claims across deletion, scale-down
// and scale-up.
//
// "static" binds hand-made hostPath volumes (a WaitForFirstConsumer class
// without a provisioner: the scheduler's VolumeBinding plugin picks the
// volume and writes its claimRef). "default class" uses the built-in
// local-path StorageClass, whose provisioner makes the volume on the node
// the scheduler picked. Both need the PV controller to complete the
// bindings; until it is served (no local-path class), the static half
// completes them itself, as the controller would, and the default-class
// half is skipped.
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
	_, err := c.run("get", "storageclass", "local-path")
	hasBinder := err == nil

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
		stop := make(chan struct{})
		done := make(chan struct{})
		if !hasBinder {
			go playBinder(c, stop, done)
		} else {
			close(done)
		}
		defer func() { close(stop); <-done }()

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
		if !hasBinder {
			t.Skip("no local-path StorageClass: the PV controller and the local-path provisioner are not served yet")
		}
		c := c.forTest(t)
		checkClaimOutlivesPod(t, c, "")
		out := c.mustStdout("get", "pvc", "note", "-o", "jsonpath={.spec.storageClassName} {.spec.volumeName}")
		if !strings.HasPrefix(out, "local-path pvc-") {
			t.Errorf("default-class claim: %q", out)
		}
		checkStatefulSet(t, c, "web", "")
	})
}

// forTest is c reporting to t (a subtest).
func (c *cluster) forTest(t *testing.T) *cluster {
	sub := *c
	sub.t = t
	return &sub
}

// playBinder does the PV controller's part while there is none: a claim
// whose volume the scheduler chose (the volume's claimRef) is bound to
// it (volumeName, bind-completed, phase Bound), and hand-made volumes are
// Available.
func playBinder(c *cluster, stop, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-time.After(300 * time.Millisecond):
		}
		out, err := c.run("get", "pv", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.spec.claimRef.namespace}/{.spec.claimRef.name}{"\n"}{end}`)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				continue
			}
			pv, phase, claim := f[0], f[1], f[2]
			if phase == "Pending" {
				c.run("patch", "pv", pv, "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Available"}}`)
			}
			ns, name, _ := strings.Cut(claim, "/")
			if name == "" {
				continue
			}
			if v, _ := c.run("get", "pvc", "-n", ns, name, "-o", "jsonpath={.spec.volumeName}"); strings.TrimSpace(v) != "" {
				continue
			}
			c.run("patch", "pvc", "-n", ns, name, "--type=merge", "-p",
				fmt.Sprintf(`{"metadata":{"annotations":{"pv.kubernetes.io/bind-completed":"yes"}},"spec":{"volumeName":%q}}`, pv))
			c.run("patch", "pvc", "-n", ns, name, "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Bound"}}`)
			c.run("patch", "pv", pv, "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Bound"}}`)
		}
	}
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
	// In order: each pod was created after the one before was ready.
	var created []string
	for i := range 3 {
		created = append(created, c.mustStdout("get", "pod", fmt.Sprintf("%s-%d", name, i), "-o", "jsonpath={.metadata.creationTimestamp}"))
	}
	if !(created[0] <= created[1] && created[1] <= created[2]) {
		t.Errorf("pods created out of order: %v", created)
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
