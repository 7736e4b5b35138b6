package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

// The PV controller's part, played by the test: bind a claim to a volume
// (the volume's claimRef, unless the scheduler wrote it, and the claim's
// volumeName and bind-completed annotation) as the controller would.
func (e *env) completeBinding(claimName, pvName string) {
	e.t.Helper()
	c, err := e.cs.CoreV1().PersistentVolumeClaims("default").Get(e.ctx, claimName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	pv, err := e.cs.CoreV1().PersistentVolumes().Get(e.ctx, pvName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if pv.Spec.ClaimRef == nil {
		pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID}
		if _, err := e.cs.CoreV1().PersistentVolumes().Update(e.ctx, pv, metav1.UpdateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	c.Spec.VolumeName = pvName
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
	if _, err := e.cs.CoreV1().PersistentVolumeClaims("default").Update(e.ctx, c, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) storageClass(name, provisioner string, mode storagev1.VolumeBindingMode) {
	e.t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
	if _, err := e.cs.StorageV1().StorageClasses().Create(e.ctx, sc, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) claim(name, class, size string) {
	e.t.Helper()
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class),
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	if _, err := e.cs.CoreV1().PersistentVolumeClaims("default").Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// localVolume makes an Available local volume on node.
func (e *env) localVolume(name, class, size, node string) {
	e.t.Helper()
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			StorageClassName:       class,
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/" + name}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
	created, err := e.cs.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	created.Status.Phase = v1.VolumeAvailable
	if _, err := e.cs.CoreV1().PersistentVolumes().UpdateStatus(e.ctx, created, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// unschedulableWith waits until the pod's PodScheduled=False message
// holds want (the scheduler's caches may first see less than the test
// wrote, and retry when they catch up).
func (e *env) unschedulableWith(name, want string) {
	e.t.Helper()
	var last string
	e.waitFor("pod "+name+" unschedulable with "+want, 10*time.Second, func() (bool, error) {
		p, err := e.cs.CoreV1().Pods("default").Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			e.t.Fatalf("pod %s bound to %s", name, p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
				last = c.Message
			}
		}
		return strings.Contains(last, want), fmt.Errorf("message %q", last)
	})
}

func podWithClaims(name string, claims ...string) *v1.Pod {
	p := st.Pod(name).Obj()
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

// TestVolumeBinding: pods go where their claims' volumes are, the
// scheduler binds WaitForFirstConsumer claims (a static volume's claimRef,
// or selected-node for the provisioner) before the pod, and says why a
// pod cannot go anywhere as upstream does.
func TestVolumeBinding(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"n1", "n2"} {
		e.node(st.Node(n).Capacity("4", "8Gi").Label(v1.LabelHostname, n).Obj())
	}
	e.storageClass("local", "kubernetes.io/no-provisioner", storagev1.VolumeBindingWaitForFirstConsumer)
	e.storageClass("dynamic", "example.com/local", storagev1.VolumeBindingWaitForFirstConsumer)
	e.storageClass("now", "example.com/now", storagev1.VolumeBindingImmediate)
	e.startScheduler(Options{})

	// A missing claim.
	e.pod(podWithClaims("no-claim", "missing"))
	e.unschedulableWith("no-claim", `persistentvolumeclaim "missing" not found`)

	// An unbound claim of immediate binding.
	e.claim("imm", "now", "1Gi")
	e.pod(podWithClaims("immediate", "imm"))
	e.unschedulableWith("immediate", "pod has unbound immediate PersistentVolumeClaims")

	// A static local volume on n2: the pod goes there once the claim is
	// bound to it; the scheduler wrote the claimRef and waits for the PV
	// controller (the test) to complete the binding.
	e.localVolume("pv-small", "local", "1Gi", "n2")
	e.localVolume("pv-tiny", "local", "100Mi", "n1") // too small for any claim below
	e.claim("data", "local", "500Mi")
	e.pod(podWithClaims("static", "data"))
	e.waitFor("pv-small's claimRef", 10*time.Second, func() (bool, error) {
		pv, err := e.cs.CoreV1().PersistentVolumes().Get(e.ctx, "pv-small", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Name == "data" && pv.Spec.ClaimRef.UID != "" &&
			pv.Annotations["pv.kubernetes.io/bound-by-controller"] == "yes", nil
	})
	time.Sleep(300 * time.Millisecond)
	if p, _ := e.cs.CoreV1().Pods("default").Get(e.ctx, "static", metav1.GetOptions{}); p.Spec.NodeName != "" {
		t.Fatalf("pod bound to %s before its claim", p.Spec.NodeName)
	}
	e.completeBinding("data", "pv-small")
	if got := e.bound("static"); got != "n2" {
		t.Errorf("static volume: pod on %s, want n2", got)
	}

	// A bound volume whose node is not schedulable any more.
	e.localVolume("pv-n3", "local", "1Gi", "n3")
	e.claim("gone", "local", "1Gi")
	c, _ := e.cs.CoreV1().PersistentVolumeClaims("default").Get(e.ctx, "gone", metav1.GetOptions{})
	pv, _ := e.cs.CoreV1().PersistentVolumes().Get(e.ctx, "pv-n3", metav1.GetOptions{})
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "gone", UID: c.UID}
	if _, err := e.cs.CoreV1().PersistentVolumes().Update(e.ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.completeBinding("gone", "pv-n3")
	e.pod(podWithClaims("conflict", "gone"))
	e.unschedulableWith("conflict", "2 node(s) didn't match PersistentVolume's node affinity")

	// No volume fits and the class cannot provision.
	e.claim("huge", "local", "100Gi")
	e.pod(podWithClaims("no-fit", "huge"))
	e.unschedulableWith("no-fit", "2 node(s) didn't find available persistent volumes to bind")

	// Dynamic provisioning: the claim is marked with the chosen node; the
	// provisioner (the test) makes a volume there and it is bound.
	e.claim("dyn", "dynamic", "1Gi")
	p := podWithClaims("dyn", "dyn")
	p.Spec.NodeSelector = map[string]string{v1.LabelHostname: "n1"}
	e.pod(p)
	e.waitFor("selected-node on claim dyn", 10*time.Second, func() (bool, error) {
		c, err := e.cs.CoreV1().PersistentVolumeClaims("default").Get(e.ctx, "dyn", metav1.GetOptions{})
		return err == nil && c.Annotations["volume.kubernetes.io/selected-node"] == "n1", err
	})
	e.localVolume("pvc-dyn", "dynamic", "1Gi", "n1")
	e.completeBinding("dyn", "pvc-dyn")
	if got := e.bound("dyn"); got != "n1" {
		t.Errorf("provisioned volume: pod on %s, want n1", got)
	}

	// The provisioner gives a claim back (removes selected-node): PreBind
	// fails, the reservation is undone, and the pod is tried again.
	e.claim("retry", "dynamic", "1Gi")
	e.pod(podWithClaims("retry", "retry"))
	selected := func() string {
		c, err := e.cs.CoreV1().PersistentVolumeClaims("default").Get(e.ctx, "retry", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Annotations["volume.kubernetes.io/selected-node"]
	}
	e.waitFor("selected-node on claim retry", 10*time.Second, func() (bool, error) { return selected() != "", nil })
	c, _ = e.cs.CoreV1().PersistentVolumeClaims("default").Get(e.ctx, "retry", metav1.GetOptions{})
	delete(c.Annotations, "volume.kubernetes.io/selected-node")
	if _, err := e.cs.CoreV1().PersistentVolumeClaims("default").Update(e.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the PreBind failure's event", 10*time.Second, func() (bool, error) {
		l, err := e.cs.CoreV1().Events("default").List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=retry,reason=FailedScheduling"})
		if err != nil {
			return false, err
		}
		for _, ev := range l.Items {
			if strings.Contains(ev.Message, `running PreBind plugin "VolumeBinding": binding volumes: provisioning failed for PVC "retry"`) {
				return true, nil
			}
		}
		return false, nil
	})
	var node string
	e.waitFor("selected-node on claim retry again", 20*time.Second, func() (bool, error) { node = selected(); return node != "", nil })
	e.localVolume("pvc-retry", "dynamic", "1Gi", node)
	e.completeBinding("retry", "pvc-retry")
	if got := e.bound("retry"); got != node {
		t.Errorf("retried pod on %s, want %s", got, node)
	}

	// The immediate claim, once bound, no longer holds its pod back.
	e.localVolume("pv-imm", "now", "1Gi", "n1")
	e.completeBinding("imm", "pv-imm")
	if got := e.bound("immediate"); got != "n1" {
		t.Errorf("immediate claim bound: pod on %s, want n1", got)
	}
}
