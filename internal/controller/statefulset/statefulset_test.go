package statefulset_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/controllertest"
	"plainkube.dev/plainkube/internal/controller/statefulset"
	"plainkube.dev/plainkube/pkg/testenv"
)

var kubeconfig string // of the last start; tests are not parallel

func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	env := testenv.Start(t, testenv.WithScheduler(), testenv.WithSimNodes(3))
	kubeconfig = env.KubeconfigPath
	c, err := statefulset.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.LoggerAt(t, slog.LevelInfo)
	controllertest.Run(t, c, 2)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	bindClaims(t, cs)
	return cs
}

// bindClaims plays the PV controller until the test ends: every claim
// gets a volume of its own and is bound to it, so that the scheduler
// (whose VolumeBinding plugin holds back pods with unbound claims) places
// the set's pods on the simulated nodes.
func bindClaims(t *testing.T, cs kubernetes.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			claims, err := cs.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{})
			if err == nil {
				for i := range claims.Items {
					if c := &claims.Items[i]; c.Spec.VolumeName == "" && c.DeletionTimestamp == nil {
						bindClaim(ctx, cs, c)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
}

func bindClaim(ctx context.Context, cs kubernetes.Interface, c *corev1.PersistentVolumeClaim) {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + string(c.UID)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               c.Spec.Resources.Requests,
			AccessModes:            c.Spec.AccessModes,
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + string(c.UID)}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return
	}
	c = c.DeepCopy()
	c.Spec.VolumeName = pv.Name
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
	c, err := cs.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{})
	if err != nil {
		return
	}
	c.Status.Phase = corev1.ClaimBound
	_, _ = cs.CoreV1().PersistentVolumeClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
}

// eventually polls cond every 50 ms for up to 30 s.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	controllertest.EventuallyWithin(t, 50*time.Millisecond, 30*time.Second, what, cond)
}

func newSet(name string, replicas int32) *appsv1.StatefulSet {
	lbls := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: lbls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
			},
		},
	}
}

// recorder watches the set's pods and records, in order, each pod's
// creation ("+name") and the start of its deletion ("-name"), and, at each
// creation, which other pods were ready then.
type recorder struct {
	mu      sync.Mutex
	log     []string
	ready   map[string]bool
	readyAt map[string][]string // pod -> pods ready when it was created
}

func record(t *testing.T, cs kubernetes.Interface, app string) *recorder {
	w, err := cs.CoreV1().Pods("default").Watch(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	r := &recorder{ready: map[string]bool{}, readyAt: map[string][]string{}}
	deleting := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			r.mu.Lock()
			switch ev.Type {
			case watch.Added:
				r.log = append(r.log, "+"+p.Name)
				var rd []string
				for n, ok := range r.ready {
					if ok {
						rd = append(rd, n)
					}
				}
				r.readyAt[p.Name] = rd
				deleting[p.Name] = false
			case watch.Modified:
				if p.DeletionTimestamp != nil && !deleting[p.Name] {
					deleting[p.Name] = true
					r.log = append(r.log, "-"+p.Name)
				}
			case watch.Deleted:
				if !deleting[p.Name] {
					r.log = append(r.log, "-"+p.Name)
				}
				deleting[p.Name] = true
			}
			r.ready[p.Name] = ev.Type != watch.Deleted && p.DeletionTimestamp == nil && statefulset.RunningAndReady(p)
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *recorder) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

func waitSet(t *testing.T, cs kubernetes.Interface, name string, cond func(s *appsv1.StatefulSet) bool) *appsv1.StatefulSet {
	t.Helper()
	var got *appsv1.StatefulSet
	eventually(t, "statefulset "+name, func() (bool, error) {
		s, err := cs.AppsV1().StatefulSets("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = s
		return cond(s), fmt.Errorf("status %+v", s.Status)
	})
	return got
}

// mutate updates the set with f, retrying on conflicts with status writes.
func mutate(t *testing.T, cs kubernetes.Interface, name string, f func(*appsv1.StatefulSet)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := cs.AppsV1().StatefulSets("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		f(s)
		_, err = cs.AppsV1().StatefulSets("default").Update(context.Background(), s, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// rolledOut is kubectl rollout status's test for a StatefulSet.
func rolledOut(s *appsv1.StatefulSet) bool {
	st := s.Status
	if st.ObservedGeneration < s.Generation || st.ReadyReplicas < *s.Spec.Replicas || st.Replicas != *s.Spec.Replicas {
		return false
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 {
		return st.UpdatedReplicas >= *s.Spec.Replicas-*ru.Partition
	}
	return st.UpdateRevision == st.CurrentRevision && st.UpdatedReplicas == *s.Spec.Replicas
}

func TestOrderedReadyScaleAndRollingUpdate(t *testing.T) {
	cs := start(t)
	ctx := context.Background()
	r := record(t, cs, "web")
	set := newSet("web", 3)
	set.Spec.VolumeClaimTemplates = claimTemplates("www")
	if _, err := cs.AppsV1().StatefulSets("default").Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := waitSet(t, cs, "web", rolledOut)
	if got, want := strings.Join(r.events(), " "), "+web-0 +web-1 +web-2"; got != want {
		t.Fatalf("creations: %s, want %s", got, want)
	}
	r.mu.Lock()
	for _, c := range []struct {
		pod  string
		want int
	}{{"web-0", 0}, {"web-1", 1}, {"web-2", 2}} {
		if len(r.readyAt[c.pod]) != c.want {
			t.Errorf("%s created with %v ready", c.pod, r.readyAt[c.pod])
		}
	}
	r.mu.Unlock()
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.Hostname != name || p.Spec.Subdomain != "web" || p.Labels[appsv1.StatefulSetPodNameLabel] != name ||
			p.Labels[appsv1.PodIndexLabel] != fmt.Sprint(i) || p.Labels[appsv1.ControllerRevisionHashLabelKey] != s.Status.UpdateRevision {
			t.Errorf("pod %s: hostname %q subdomain %q labels %v", name, p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
		}
		claim := "www-" + name
		if _, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim, metav1.GetOptions{}); err != nil {
			t.Errorf("claim %s: %v", claim, err)
		}
		found := false
		for _, v := range p.Spec.Volumes {
			found = found || v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim
		}
		if !found {
			t.Errorf("pod %s does not use claim %s: %v", name, claim, p.Spec.Volumes)
		}
	}
	if s.Status.CurrentRevision == "" || s.Status.CurrentRevision != s.Status.UpdateRevision || s.Status.CurrentReplicas != 3 {
		t.Errorf("status: %+v", s.Status)
	}

	eventually(t, "events", func() (bool, error) {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		if err != nil {
			return false, err
		}
		var msgs []string
		for _, e := range evs.Items {
			if e.Reason == "SuccessfulCreate" && e.Source.Component == statefulset.Component {
				msgs = append(msgs, e.Message)
			}
		}
		want := []string{"create Pod web-0 in StatefulSet web successful", "create Claim www-web-0 Pod web-0 in StatefulSet web success"}
		for _, w := range want {
			found := false
			for _, m := range msgs {
				found = found || m == w
			}
			if !found {
				return false, fmt.Errorf("events %q", msgs)
			}
		}
		return true, nil
	})

	// A template change rolls the pods from the highest ordinal down.
	n := len(r.events())
	mutate(t, cs, s.Name, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "busybox:1.37" })
	controllertest.RolloutStatus(t, kubeconfig, "statefulset/web")
	s = waitSet(t, cs, "web", func(s *appsv1.StatefulSet) bool { return rolledOut(s) && s.Status.UpdatedReplicas == 3 })
	if got, want := strings.Join(r.events()[n:], " "), "-web-2 +web-2 -web-1 +web-1 -web-0 +web-0"; got != want {
		t.Fatalf("rolling update: %s, want %s", got, want)
	}
	pods, _ := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	for _, p := range pods.Items {
		if p.Spec.Containers[0].Image != "busybox:1.37" || p.Labels[appsv1.ControllerRevisionHashLabelKey] != s.Status.UpdateRevision {
			t.Errorf("pod %s not updated", p.Name)
		}
	}

	// Scale down deletes from the highest ordinal, one at a time.
	n = len(r.events())
	mutate(t, cs, s.Name, func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	waitSet(t, cs, "web", func(s *appsv1.StatefulSet) bool { return rolledOut(s) && s.Status.Replicas == 1 })
	if got, want := strings.Join(r.events()[n:], " "), "-web-2 -web-1"; got != want {
		t.Fatalf("scale down: %s, want %s", got, want)
	}
	// Claims are retained by default.
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "www-web-2", metav1.GetOptions{}); err != nil {
		t.Errorf("claim www-web-2: %v", err)
	}
}

func TestParallelAndPartition(t *testing.T) {
	cs := start(t)
	ctx := context.Background()
	set := newSet("par", 3)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
	if _, err := cs.AppsV1().StatefulSets("default").Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := waitSet(t, cs, "par", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 3 })
	old := s.Status.UpdateRevision
	mutate(t, cs, s.Name, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "busybox:1.37" })
	s = waitSet(t, cs, "par", func(s *appsv1.StatefulSet) bool {
		return rolledOut(s) && s.Status.UpdateRevision != old && s.Status.UpdatedReplicas == 1 && s.Status.ReadyReplicas == 3
	})
	if s.Status.CurrentRevision != old {
		t.Errorf("current revision %s, want %s", s.Status.CurrentRevision, old)
	}
	for i, want := range []string{old, old, s.Status.UpdateRevision} {
		p, err := cs.CoreV1().Pods("default").Get(ctx, fmt.Sprintf("par-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Labels[appsv1.ControllerRevisionHashLabelKey]; got != want {
			t.Errorf("par-%d on %s, want %s", i, got, want)
		}
	}
}

func TestClaimRetentionPolicy(t *testing.T) {
	cs := start(t)
	ctx := context.Background()
	set := newSet("db", 2)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	set.Spec.VolumeClaimTemplates = claimTemplates("data")
	created, err := cs.AppsV1().StatefulSets("default").Create(ctx, set, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitSet(t, cs, "db", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 2 })
	claim, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-db-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].UID != created.UID || claim.Labels["app"] != "db" {
		t.Fatalf("claim owners %v labels %v", claim.OwnerReferences, claim.Labels)
	}
	pod, err := cs.CoreV1().Pods("default").Get(ctx, "db-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mutate(t, cs, "db", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	eventually(t, "claim of the scaled-away pod owned by it", func() (bool, error) {
		c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-db-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(c.OwnerReferences) == 1 && c.OwnerReferences[0].UID == pod.UID {
			return true, nil
		}
		return false, fmt.Errorf("owners %v", c.OwnerReferences)
	})
	c0, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-db-0", metav1.GetOptions{})
	if err != nil || len(c0.OwnerReferences) != 1 {
		t.Fatalf("claim data-db-0: %v %v", c0, err)
	}
}

// claimUIDs returns the UIDs of the named claims ("" for a missing one).
func claimUIDs(t *testing.T, cs kubernetes.Interface, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			out = append(out, "")
			continue
		}
		out = append(out, string(c.UID))
	}
	return out
}

// TestClaimsKeptAndReused: one claim per ordinal, kept when its pod is
// deleted and when the set scales down (Retain), used again by the
// re-created pods; a retention policy changed later applies to the
// existing claims.
func TestClaimsKeptAndReused(t *testing.T) {
	cs := start(t)
	ctx := context.Background()
	set := newSet("db", 3)
	set.Spec.VolumeClaimTemplates = claimTemplates("data")
	created, err := cs.AppsV1().StatefulSets("default").Create(ctx, set, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitSet(t, cs, "db", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 3 })
	names := []string{"data-db-0", "data-db-1", "data-db-2"}
	uids := claimUIDs(t, cs, names...)
	for i, u := range uids {
		if u == "" {
			t.Fatalf("claim %s missing", names[i])
		}
	}

	// A deleted pod comes back with the same claim.
	old, err := cs.CoreV1().Pods("default").Get(ctx, "db-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "db-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "db-1 re-created", func() (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "db-1", metav1.GetOptions{})
		return err == nil && p.UID != old.UID && p.Spec.NodeName != "", err
	})

	// Scale to 1 and back: the claims of 1 and 2 stay and are reused.
	mutate(t, cs, "db", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	waitSet(t, cs, "db", func(s *appsv1.StatefulSet) bool { return rolledOut(s) && s.Status.Replicas == 1 })
	if got := claimUIDs(t, cs, names...); fmt.Sprint(got) != fmt.Sprint(uids) {
		t.Fatalf("claims after scale-down %v, want %v", got, uids)
	}
	mutate(t, cs, "db", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](3) })
	waitSet(t, cs, "db", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 3 })
	if got := claimUIDs(t, cs, names...); fmt.Sprint(got) != fmt.Sprint(uids) {
		t.Fatalf("claims after scale-up %v, want %v", got, uids)
	}
	for _, n := range names {
		c, _ := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, n, metav1.GetOptions{})
		if len(c.OwnerReferences) != 0 {
			t.Errorf("claim %s owned by %v under Retain", n, c.OwnerReferences)
		}
	}

	// whenDeleted: Delete set later: the existing claims become the set's.
	mutate(t, cs, "db", func(s *appsv1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
	})
	for _, n := range names {
		eventually(t, n+" owned by the set", func() (bool, error) {
			c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ok := len(c.OwnerReferences) == 1 && c.OwnerReferences[0].UID == created.UID && ptr.Deref(c.OwnerReferences[0].Controller, false)
			return ok, fmt.Errorf("owners %v", c.OwnerReferences)
		})
	}
	// Scaled down under whenScaled: Retain, a claim stays the set's.
	mutate(t, cs, "db", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](2) })
	waitSet(t, cs, "db", func(s *appsv1.StatefulSet) bool { return rolledOut(s) && s.Status.Replicas == 2 })
	c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-db-2", metav1.GetOptions{})
	if err != nil || len(c.OwnerReferences) != 1 || c.OwnerReferences[0].UID != created.UID {
		t.Errorf("data-db-2 after scale-down: %v %v", c, err)
	}
}

// claimTemplates is a volumeClaimTemplates list of one 1Gi
// ReadWriteOnce claim.
func claimTemplates(name string) []corev1.PersistentVolumeClaim {
	return []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}}
}
