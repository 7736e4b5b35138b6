package replicaset

import (
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// pod builds a pod for ranking tests.
type podOpt func(*corev1.Pod)

func mkPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name),
		CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)), Labels: map[string]string{"app": "web"}},
		Spec:   corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt          { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func created(ago time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-ago)) }
}
func deleting() podOpt {
	return func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }
}
func withLabels(l map[string]string) podOpt { return func(p *corev1.Pod) { p.Labels = l } }
func cost(c string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{PodDeletionCostAnnotation: c} }
}
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	}
}
func readySince(ago time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady,
			Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-ago))})
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestPodsToDeleteRanking(t *testing.T) {
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		related []*corev1.Pod
		want    []string // the whole deletion order
	}{
		{
			name: "unscheduled before scheduled",
			pods: []*corev1.Pod{mkPod("a", readySince(time.Hour)), mkPod("b", onNode(""), phase(corev1.PodPending))},
			want: []string{"b", "a"},
		},
		{
			name: "pending before unknown before running",
			pods: []*corev1.Pod{mkPod("run"), mkPod("unk", phase(corev1.PodUnknown)), mkPod("pend", phase(corev1.PodPending))},
			want: []string{"pend", "unk", "run"},
		},
		{
			name: "not ready before ready",
			pods: []*corev1.Pod{mkPod("ready", readySince(time.Hour)), mkPod("notready")},
			want: []string{"notready", "ready"},
		},
		{
			name: "lower deletion cost first, bad cost counts as zero",
			pods: []*corev1.Pod{mkPod("c10", readySince(time.Hour), cost("10")), mkPod("cbad", readySince(time.Hour), cost("x")),
				mkPod("cneg", readySince(time.Hour), cost("-5"))},
			want: []string{"cneg", "cbad", "c10"},
		},
		{
			name: "doubled up with related pods first",
			pods: []*corev1.Pod{mkPod("alone", onNode("n1"), readySince(time.Hour)), mkPod("crowded", onNode("n2"), readySince(time.Hour))},
			related: []*corev1.Pod{mkPod("r1", onNode("n2")), mkPod("r2", onNode("n2")), mkPod("r3", onNode("n1")),
				mkPod("gone", onNode("n1"), deleting())},
			want: []string{"crowded", "alone"},
		},
		{
			name: "ready for less time first (log2 buckets)",
			pods: []*corev1.Pod{mkPod("old", readySince(10*time.Hour)), mkPod("new", readySince(time.Minute))},
			want: []string{"new", "old"},
		},
		{
			name: "more restarts first",
			pods: []*corev1.Pod{mkPod("calm", restarts(0)), mkPod("crashy", restarts(7))},
			want: []string{"crashy", "calm"},
		},
		{
			name: "newer first",
			pods: []*corev1.Pod{mkPod("old", created(48*time.Hour)), mkPod("new", created(time.Minute)), mkPod("mid", created(3*time.Hour))},
			want: []string{"new", "mid", "old"},
		},
		{
			name: "same log2 age bucket: by UID",
			pods: []*corev1.Pod{mkPod("b", created(time.Hour+time.Second)), mkPod("a", created(time.Hour))},
			want: []string{"a", "b"},
		},
		{
			name: "zero creation time first",
			pods: []*corev1.Pod{mkPod("x", created(time.Minute)), mkPod("zero", func(p *corev1.Pod) { p.CreationTimestamp = metav1.Time{} })},
			want: []string{"zero", "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rankPods(tt.pods, tt.related, t0)
			sort.Sort(r)
			if got := names(r.pods); !slices.Equal(got, tt.want) {
				t.Errorf("order = %v, want %v", got, tt.want)
			}
			// podsToDelete takes a prefix of that order, without touching its input.
			in := slices.Clone(tt.pods)
			if got := names(podsToDelete(in, tt.related, 1, t0)); !slices.Equal(got, tt.want[:1]) {
				t.Errorf("podsToDelete(1) = %v, want %v", got, tt.want[:1])
			}
			if !slices.Equal(names(in), names(tt.pods)) {
				t.Errorf("podsToDelete reordered its input")
			}
		})
	}
}

func TestPodsToDeleteAll(t *testing.T) {
	pods := []*corev1.Pod{mkPod("a"), mkPod("b")}
	if got := podsToDelete(pods, nil, 5, t0); len(got) != 2 {
		t.Errorf("got %v", names(got))
	}
}

func TestPodFromTemplate(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"},
		Annotations: map[string]string{"a": "b"}, Finalizers: []string{"f"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", UID: "u1"}}
	ref := metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	pod, err := podFromTemplate(tmpl, owner.Name, ref)
	if err != nil {
		t.Fatal(err)
	}
	if pod.GenerateName != "web-abc-" || pod.Labels["app"] != "web" || pod.Annotations["a"] != "b" || pod.Finalizers[0] != "f" ||
		pod.Spec.Containers[0].Image != "nginx" || len(pod.OwnerReferences) != 1 || !*pod.OwnerReferences[0].Controller ||
		!*pod.OwnerReferences[0].BlockOwnerDeletion || pod.OwnerReferences[0].Kind != "ReplicaSet" {
		t.Errorf("pod = %+v", pod)
	}
	pod.Labels["app"] = "changed"
	if tmpl.Labels["app"] != "web" {
		t.Error("pod shares the template's labels map")
	}
	if _, err := podFromTemplate(&corev1.PodTemplateSpec{}, "x", nil); err == nil {
		t.Error("a template without labels should not make pods")
	}
	if got := podsPrefix("Web"); got != "Web" {
		t.Errorf("an invalid prefix should fall back to the name, got %q", got)
	}
}

func TestCalculateStatus(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Generation: 3},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](4), MinReadySeconds: 30,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "fe"}}}}}
	full := map[string]string{"app": "web", "tier": "fe"}
	active := []*corev1.Pod{
		mkPod("available", withLabels(full), readySince(time.Minute)),
		mkPod("ready-not-yet-available", withLabels(full), readySince(10*time.Second)),
		mkPod("not-ready", withLabels(full)),
		mkPod("partly-labeled", readySince(time.Hour)),
	}
	terminating := []*corev1.Pod{mkPod("t", deleting())}
	w := fromReplicaSet(rs)
	st := calculateStatus(w, active, terminating, true, nil, t0)
	if st.Replicas != 4 || st.FullyLabeledReplicas != 3 || st.ReadyReplicas != 3 || st.AvailableReplicas != 2 ||
		st.TerminatingReplicas == nil || *st.TerminatingReplicas != 1 || len(st.Conditions) != 0 {
		t.Errorf("status = %+v", st)
	}
	if statusUnchanged(w, st) {
		t.Error("status should need writing")
	}
	if st := calculateStatus(w, active, nil, false, nil, t0); st.TerminatingReplicas != nil {
		t.Error("a kind without terminatingReplicas got one")
	}

	// A failed create sets ReplicaFailure/FailedCreate once; success clears it.
	short := active[:2]
	st = calculateStatus(w, short, nil, true, errors.New(`pods "rs-" is forbidden: exceeded quota`), t0)
	if len(st.Conditions) != 1 || st.Conditions[0].Type != ReplicaFailure || st.Conditions[0].Reason != "FailedCreate" ||
		st.Conditions[0].Status != corev1.ConditionTrue || st.Conditions[0].Message != `pods "rs-" is forbidden: exceeded quota` {
		t.Fatalf("conditions = %+v", st.Conditions)
	}
	w.status = st
	again := calculateStatus(w, short, nil, true, errors.New("another"), t0.Add(time.Minute))
	if !conditionsEqual(again.Conditions, st.Conditions) {
		t.Errorf("an existing ReplicaFailure condition was replaced: %+v", again.Conditions)
	}
	if cleared := calculateStatus(w, short, nil, true, nil, t0); len(cleared.Conditions) != 0 {
		t.Errorf("conditions not cleared: %+v", cleared.Conditions)
	}
	extra := append(slices.Clone(active), mkPod("extra", withLabels(full)))
	w.status.Conditions = nil
	if st := calculateStatus(w, extra, nil, true, errors.New("x"), t0); st.Conditions[0].Reason != "FailedDelete" {
		t.Errorf("reason = %q, want FailedDelete", st.Conditions[0].Reason)
	}

	// Written once, the same status is not written again.
	w.status = calculateStatus(w, active, terminating, true, nil, t0)
	w.status.ObservedGeneration = 3
	if !statusUnchanged(w, calculateStatus(w, active, terminating, true, nil, t0)) {
		t.Error("an unchanged status would be written again")
	}
}

func TestDecideClaim(t *testing.T) {
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "owner"}}
	dyingOwner := owner.DeepCopy()
	dyingOwner.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	ours := mkPod("ours")
	ours.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	theirs := mkPod("theirs")
	theirs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: "other", Controller: ptr.To(true)}}
	orphan := mkPod("orphan")
	dyingOrphan := mkPod("dying", deleting())
	elsewhere := mkPod("elsewhere")
	elsewhere.Namespace = "other"
	tests := []struct {
		name    string
		owner   *appsv1.ReplicaSet
		obj     *corev1.Pod
		matches bool
		want    controller.Claim
	}{
		{"ours and matching", owner, ours, true, controller.KeepObject},
		{"ours, no longer matching", owner, ours, false, controller.ReleaseObject},
		{"ours, not matching, owner being deleted", dyingOwner, ours, false, controller.IgnoreObject},
		{"someone else's", owner, theirs, true, controller.IgnoreObject},
		{"matching orphan", owner, orphan, true, controller.AdoptObject},
		{"orphan not matching", owner, orphan, false, controller.IgnoreObject},
		{"orphan, owner being deleted", dyingOwner, orphan, true, controller.IgnoreObject},
		{"orphan being deleted", owner, dyingOrphan, true, controller.IgnoreObject},
		{"orphan in another namespace", owner, elsewhere, true, controller.IgnoreObject},
	}
	for _, tt := range tests {
		if got := controller.DecideClaim(tt.owner, tt.obj, tt.matches); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := string(controller.ReleasePatch("owner", "pod")); got != `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"owner"}],"uid":"pod"}}` {
		t.Errorf("release patch = %s", got)
	}
	if got := string(controller.AdoptPatch(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), owner, "pod")); got !=
		`{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"owner","controller":true,"blockOwnerDeletion":true}],"uid":"pod"}}` {
		t.Errorf("adopt patch = %s", got)
	}
}
