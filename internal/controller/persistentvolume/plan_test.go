package persistentvolume

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/volume"

	"plainkube.dev/plainkube/internal/api/localpath"
)

var (
	rwo = corev1.ReadWriteOnce
	rox = corev1.ReadOnlyMany
	rwx = corev1.ReadWriteMany
)

func pv(name, size string, opts ...func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{rwo},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
	for _, o := range opts {
		o(v)
	}
	return v
}

func pvc(name, size string, opts ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{rwo},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func modes(m ...corev1.PersistentVolumeAccessMode) func(*corev1.PersistentVolume) {
	return func(v *corev1.PersistentVolume) { v.Spec.AccessModes = m }
}
func pvClass(c string) func(*corev1.PersistentVolume) {
	return func(v *corev1.PersistentVolume) { v.Spec.StorageClassName = c }
}
func pvLabels(l map[string]string) func(*corev1.PersistentVolume) {
	return func(v *corev1.PersistentVolume) { v.Labels = l }
}
func pvPhase(p corev1.PersistentVolumePhase) func(*corev1.PersistentVolume) {
	return func(v *corev1.PersistentVolume) { v.Status.Phase = p }
}
func block(v *corev1.PersistentVolume) {
	m := corev1.PersistentVolumeBlock
	v.Spec.VolumeMode = &m
}
func claimRef(ns, name string, uid types.UID) func(*corev1.PersistentVolume) {
	return func(v *corev1.PersistentVolume) {
		v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: ns, Name: name, UID: uid}
	}
}
func pvAnn(k, val string) func(*corev1.PersistentVolume) {
	return func(v *corev1.PersistentVolume) { metav1.SetMetaDataAnnotation(&v.ObjectMeta, k, val) }
}
func reclaimPolicy(p corev1.PersistentVolumeReclaimPolicy) func(*corev1.PersistentVolume) {
	return func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeReclaimPolicy = p }
}
func deletingPV(v *corev1.PersistentVolume) {
	now := metav1.Now()
	v.DeletionTimestamp = &now
}

func class(c string) func(*corev1.PersistentVolumeClaim) {
	return func(x *corev1.PersistentVolumeClaim) { x.Spec.StorageClassName = &c }
}
func claimModes(m ...corev1.PersistentVolumeAccessMode) func(*corev1.PersistentVolumeClaim) {
	return func(x *corev1.PersistentVolumeClaim) { x.Spec.AccessModes = m }
}
func selector(l map[string]string) func(*corev1.PersistentVolumeClaim) {
	return func(x *corev1.PersistentVolumeClaim) { x.Spec.Selector = &metav1.LabelSelector{MatchLabels: l} }
}
func volumeName(n string) func(*corev1.PersistentVolumeClaim) {
	return func(x *corev1.PersistentVolumeClaim) { x.Spec.VolumeName = n }
}
func claimAnn(k, val string) func(*corev1.PersistentVolumeClaim) {
	return func(x *corev1.PersistentVolumeClaim) { metav1.SetMetaDataAnnotation(&x.ObjectMeta, k, val) }
}
func claimBlock(x *corev1.PersistentVolumeClaim) {
	m := corev1.PersistentVolumeBlock
	x.Spec.VolumeMode = &m
}

func storageClass(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

func TestBestMatch(t *testing.T) {
	for _, tt := range []struct {
		name    string
		claim   *corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		delay   bool
		want    string
	}{
		{"smallest that fits", pvc("c", "5Gi"), []*corev1.PersistentVolume{pv("big", "100Gi"), pv("small", "1Gi"), pv("fit", "10Gi"), pv("exact", "5Gi")}, false, "exact"},
		{"too small", pvc("c", "5Gi"), []*corev1.PersistentVolume{pv("small", "1Gi")}, false, ""},
		{"class must match", pvc("c", "1Gi", class("fast")), []*corev1.PersistentVolume{pv("none", "1Gi"), pv("slow", "1Gi", pvClass("slow")), pv("fast", "5Gi", pvClass("fast"))}, false, "fast"},
		{"no class matches no class only", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("fast", "1Gi", pvClass("fast")), pv("none", "5Gi")}, false, "none"},
		{"access modes must be held", pvc("c", "1Gi", claimModes(rwx)), []*corev1.PersistentVolume{pv("rwo", "1Gi"), pv("rwx", "5Gi", modes(rwo, rwx))}, false, "rwx"},
		{"fewest modes first, before size", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("many", "1Gi", modes(rwo, rox, rwx)), pv("one", "10Gi")}, false, "one"},
		{"selector", pvc("c", "1Gi", selector(map[string]string{"tier": "db"})), []*corev1.PersistentVolume{pv("plain", "1Gi"), pv("db", "5Gi", pvLabels(map[string]string{"tier": "db"}))}, false, "db"},
		{"volume mode", pvc("c", "1Gi", claimBlock), []*corev1.PersistentVolume{pv("fs", "1Gi"), pv("blk", "5Gi", block)}, false, "blk"},
		{"filesystem claim skips block", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("blk", "1Gi", block)}, false, ""},
		{"claimed by another", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("taken", "1Gi", claimRef("ns", "other", "u"))}, false, ""},
		{"not available", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("released", "1Gi", pvPhase(corev1.VolumeReleased))}, false, ""},
		{"being deleted", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("gone", "1Gi", deletingPV)}, false, ""},
		{"pre-bound wins over smaller", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("small", "1Gi"), pv("mine", "50Gi", claimRef("ns", "c", ""))}, false, "mine"},
		{"pre-bound ignores class and phase", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("mine", "1Gi", claimRef("ns", "c", "uid-c"), pvClass("x"), pvPhase(corev1.VolumeBound))}, false, "mine"},
		{"pre-bound with another UID", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("old", "1Gi", claimRef("ns", "c", "uid-old"))}, false, ""},
		{"delay binding: pre-bound only", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("free", "1Gi")}, true, ""},
		{"delay binding: pre-bound", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("free", "1Gi"), pv("mine", "1Gi", claimRef("ns", "c", "uid-c"))}, true, "mine"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bestMatch(tt.claim, tt.volumes, tt.delay)
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Errorf("matched %q, want %q", name, tt.want)
			}
		})
	}
}

func TestPlanClaim(t *testing.T) {
	wffc := storageClass("local", localpath.Provisioner, storagev1.VolumeBindingWaitForFirstConsumer)
	immediate := storageClass("ext", "example.com/ext", storagev1.VolumeBindingImmediate)
	for _, tt := range []struct {
		name       string
		st         ClaimState
		action     ClaimAction
		volume     string
		reason     string
		message    string
		wantErr    bool
		provsioner string
		className  string
	}{
		{name: "binds a match", st: ClaimState{Claim: pvc("c", "1Gi"), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi")}},
			action: ClaimBind, volume: "v"},
		{name: "nothing and no class", st: ClaimState{Claim: pvc("c", "1Gi")},
			action: ClaimPending, reason: "FailedBinding", message: "no persistent volumes available for this claim and no storage class is set"},
		{name: "no class: the default once there is one", st: ClaimState{Claim: pvc("c", "1Gi"), DefaultClass: wffc},
			action: ClaimAssignClass, className: "local"},
		{name: "no class: a volume of no class first", st: ClaimState{Claim: pvc("c", "1Gi"), DefaultClass: wffc, Volumes: []*corev1.PersistentVolume{pv("v", "1Gi")}},
			action: ClaimBind, volume: "v"},
		{name: "an empty class is asked for: not the default", st: ClaimState{Claim: pvc("c", "1Gi", class("")), DefaultClass: wffc},
			action: ClaimPending, reason: "FailedBinding"},
		{name: "the beta class annotation: not the default", st: ClaimState{Claim: pvc("c", "1Gi", claimAnn(corev1.BetaStorageClassAnnotation, "")), DefaultClass: wffc},
			action: ClaimPending, reason: "FailedBinding"},
		{name: "waits for first consumer", st: ClaimState{Claim: pvc("c", "1Gi", class("local")), Class: wffc, Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", pvClass("local"))}},
			action: ClaimPending, reason: "WaitForFirstConsumer", message: "waiting for first consumer to be created before binding"},
		{name: "waits for its pod", st: ClaimState{Claim: pvc("c", "1Gi", class("local")), Class: wffc, UnscheduledPods: []string{"p"}},
			action: ClaimPending, reason: "WaitForPodScheduled", message: "waiting for pod p to be scheduled"},
		{name: "selected node: provision", st: ClaimState{Claim: pvc("c", "1Gi", class("local"), claimAnn(volume.AnnSelectedNode, "n1")), Class: wffc},
			action: ClaimProvision, reason: "ExternalProvisioning", provsioner: localpath.Provisioner},
		{name: "selected node: pre-bound volume binds", st: ClaimState{Claim: pvc("c", "1Gi", class("local"), claimAnn(volume.AnnSelectedNode, "n1")), Class: wffc,
			Volumes: []*corev1.PersistentVolume{pv("pvc-uid-c", "1Gi", pvClass("local"), claimRef("ns", "c", "uid-c"))}},
			action: ClaimBind, volume: "pvc-uid-c"},
		{name: "immediate class provisions", st: ClaimState{Claim: pvc("c", "1Gi", class("ext")), Class: immediate},
			action: ClaimProvision, reason: "ExternalProvisioning", provsioner: "example.com/ext"},
		{name: "class not found", st: ClaimState{Claim: pvc("c", "1Gi", class("nope"))},
			action: ClaimNone, reason: "ProvisioningFailed", message: `storageclass.storage.k8s.io "nope" not found`},
		{name: "named volume missing", st: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"))}, action: ClaimPending},
		{name: "named volume free", st: ClaimState{Claim: pvc("c", "1Gi", volumeName("v")), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi")}},
			action: ClaimBind, volume: "v"},
		{name: "named volume too small", st: ClaimState{Claim: pvc("c", "5Gi", volumeName("v")), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi")}},
			action: ClaimPending, reason: "VolumeMismatch", message: `Cannot bind to requested volume "v": requested PV is too small`},
		{name: "named volume of another class", st: ClaimState{Claim: pvc("c", "1Gi", volumeName("v")), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", pvClass("x"))}},
			action: ClaimPending, reason: "VolumeMismatch", message: `Cannot bind to requested volume "v": storageClassName does not match`},
		{name: "named volume taken", st: ClaimState{Claim: pvc("c", "1Gi", volumeName("v")), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", claimRef("ns", "other", "u"))}},
			action: ClaimPending, reason: "FailedBinding", message: `volume "v" already bound to a different claim.`},
		{name: "named volume taken, bound by controller", st: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"), claimAnn(volume.AnnBoundByController, "yes")),
			Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", claimRef("ns", "other", "u"))}},
			action: ClaimNone, reason: "FailedBinding", wantErr: true},
		{name: "bound: all well", st: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"), claimAnn(volume.AnnBindCompleted, "yes")),
			Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", claimRef("ns", "c", "uid-c"))}}, action: ClaimBind, volume: "v"},
		{name: "bound: volume unbound", st: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"), claimAnn(volume.AnnBindCompleted, "yes")),
			Volumes: []*corev1.PersistentVolume{pv("v", "1Gi")}}, action: ClaimBind, volume: "v"},
		{name: "bound: volume gone", st: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"), claimAnn(volume.AnnBindCompleted, "yes"))},
			action: ClaimLost, reason: "ClaimLost", message: "Bound claim has lost its PersistentVolume. Data on the volume is lost!"},
		{name: "bound: volume name cleared", st: ClaimState{Claim: pvc("c", "1Gi", claimAnn(volume.AnnBindCompleted, "yes"))},
			action: ClaimLost, reason: "ClaimLost", message: "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"},
		{name: "bound: misbound", st: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"), claimAnn(volume.AnnBindCompleted, "yes")),
			Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", claimRef("ns", "other", "u"))}},
			action: ClaimLost, reason: "ClaimMisbound", message: "Two claims are bound to the same volume, this one is bound incorrectly"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := planClaim(tt.st)
			if p.Action != tt.action {
				t.Errorf("action %v, want %v", p.Action, tt.action)
			}
			if (p.Err != nil) != tt.wantErr {
				t.Errorf("error %v, want one: %v", p.Err, tt.wantErr)
			}
			name := ""
			if p.Volume != nil {
				name = p.Volume.Name
			}
			if name != tt.volume {
				t.Errorf("volume %q, want %q", name, tt.volume)
			}
			if p.ClassName != tt.className {
				t.Errorf("class %q, want %q", p.ClassName, tt.className)
			}
			if p.Provisioner != tt.provsioner {
				t.Errorf("provisioner %q, want %q", p.Provisioner, tt.provsioner)
			}
			reason, msg := "", ""
			if p.Event != nil {
				reason, msg = p.Event.Reason, p.Event.Message
			}
			if reason != tt.reason || (tt.message != "" && msg != tt.message) {
				t.Errorf("event %s %q, want %s %q", reason, msg, tt.reason, tt.message)
			}
		})
	}
}

func TestPlanVolume(t *testing.T) {
	bound := pvc("c", "1Gi", volumeName("v"), claimAnn(volume.AnnBindCompleted, "yes"))
	elsewhere := pvc("c", "1Gi", volumeName("other"), claimAnn(volume.AnnBindCompleted, "yes"))
	ours := pvAnn(volume.AnnDynamicallyProvisioned, localpath.Provisioner)
	for _, tt := range []struct {
		name   string
		st     VolumeState
		action VolumeAction
		phase  corev1.PersistentVolumePhase
		reason string
	}{
		{"new volume is Available", VolumeState{Volume: pv("v", "1Gi", pvPhase(corev1.VolumePending))}, VolumePhase, corev1.VolumeAvailable, ""},
		{"available stays", VolumeState{Volume: pv("v", "1Gi")}, VolumeNone, "", ""},
		{"pre-bound by user without UID", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", ""), pvPhase(corev1.VolumePending))}, VolumePhase, corev1.VolumeAvailable, ""},
		{"bound both ways", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c")), Claim: bound}, VolumePhase, corev1.VolumeBound, ""},
		{"claim not yet bound", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c")), Claim: pvc("c", "1Gi")}, VolumeSyncClaim, "", ""},
		{"claim not yet bound, mode mismatch", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c"), block), Claim: pvc("c", "1Gi")}, VolumeNone, "", "VolumeMismatch"},
		{"retain: released", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeBound))}, VolumePhase, corev1.VolumeReleased, ""},
		{"retain: released stays", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeReleased))}, VolumeNone, "", ""},
		{"delete: ours is deleted", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeBound), ours, reclaimPolicy(corev1.PersistentVolumeReclaimDelete))},
			VolumeDelete, corev1.VolumeReleased, ""},
		{"delete: ours, already deleting", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeReleased), ours, reclaimPolicy(corev1.PersistentVolumeReclaimDelete), deletingPV)},
			VolumeNone, "", ""},
		{"delete: another provisioner's waits", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeBound), pvAnn(volume.AnnDynamicallyProvisioned, "example.com/ext"), reclaimPolicy(corev1.PersistentVolumeReclaimDelete))},
			VolumePhase, corev1.VolumeReleased, ""},
		{"delete: no deleter", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeBound), reclaimPolicy(corev1.PersistentVolumeReclaimDelete))},
			VolumePhase, corev1.VolumeFailed, "VolumeFailedDelete"},
		{"failed stays failed", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeFailed), reclaimPolicy(corev1.PersistentVolumeReclaimDelete))},
			VolumeNone, "", ""},
		{"recycle: no recycler", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeBound), reclaimPolicy(corev1.PersistentVolumeReclaimRecycle))},
			VolumePhase, corev1.VolumeFailed, "VolumeFailedRecycle"},
		{"claim bound elsewhere: unbind", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvAnn(volume.AnnBoundByController, "yes")), Claim: elsewhere}, VolumeUnbind, "", ""},
		{"claim bound elsewhere: ours deleted", VolumeState{Volume: pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeBound), ours, reclaimPolicy(corev1.PersistentVolumeReclaimDelete)), Claim: elsewhere},
			VolumeDelete, corev1.VolumeReleased, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := planVolume(tt.st)
			if p.Action != tt.action || p.Phase != tt.phase {
				t.Errorf("plan %v %q, want %v %q", p.Action, p.Phase, tt.action, tt.phase)
			}
			reason := ""
			if p.Event != nil {
				reason = p.Event.Reason
			}
			if reason != tt.reason {
				t.Errorf("event %q, want %q", reason, tt.reason)
			}
		})
	}
}

func TestBinding(t *testing.T) {
	claim := pvc("c", "1Gi")
	claim.ResourceVersion = "7"
	vol := pv("v", "10Gi", modes(rwo, rox))
	out, changed, statusChanged := boundVolume(vol, claim)
	if !changed || !statusChanged || out.Spec.ClaimRef.UID != claim.UID || out.Annotations[volume.AnnBoundByController] != "yes" || out.Status.Phase != corev1.VolumeBound {
		t.Fatalf("bound volume: %+v %v %v", out, changed, statusChanged)
	}
	if _, changed, statusChanged := boundVolume(out, claim); changed || statusChanged {
		t.Error("binding a bound volume again changed it")
	}
	// A user's pre-binding is completed without the controller's mark.
	pre := pv("v", "10Gi", claimRef("ns", "c", ""))
	if out, _, _ := boundVolume(pre, claim); out.Annotations[volume.AnnBoundByController] != "" || out.Spec.ClaimRef.UID != claim.UID {
		t.Errorf("pre-bound volume: %+v", out)
	}
	cout, changed, statusChanged := boundClaim(claim, out)
	if !changed || !statusChanged || cout.Spec.VolumeName != "v" || cout.Annotations[volume.AnnBindCompleted] != "yes" || cout.Annotations[volume.AnnBoundByController] != "yes" {
		t.Fatalf("bound claim: %+v", cout)
	}
	if q := cout.Status.Capacity[corev1.ResourceStorage]; q.String() != "10Gi" || len(cout.Status.AccessModes) != 2 || cout.Status.Phase != corev1.ClaimBound {
		t.Errorf("claim status %+v", cout.Status)
	}
	named := pvc("c", "1Gi", volumeName("v"))
	if cout, _, _ := boundClaim(named, out); cout.Annotations[volume.AnnBoundByController] != "" {
		t.Errorf("a claim naming its volume got bound-by-controller")
	}
	// Unbinding: the controller's binding entirely, a user's to the name.
	if u := unboundVolume(out); u.Spec.ClaimRef != nil || u.Annotations != nil {
		t.Errorf("unbound %+v", u)
	}
	userBound := pv("v", "1Gi", claimRef("ns", "c", "uid-c"))
	if u := unboundVolume(userBound); u.Spec.ClaimRef == nil || u.Spec.ClaimRef.UID != "" || u.Spec.ClaimRef.Name != "c" {
		t.Errorf("unbound user binding %+v", u.Spec.ClaimRef)
	}
}
