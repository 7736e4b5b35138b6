package server

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// topologyNode creates a node with the given labels.
func topologyNode(t *testing.T, cs kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// bind binds pod name to node through pods/binding.
func bind(t *testing.T, cs kubernetes.Interface, name, node string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := cs.CoreV1().Pods("default").Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind %s to %s: %v", name, node, err)
	}
	pod, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// TestPodTopologyLabels: a pod bound to a node (pods/binding, or created
// with spec.nodeName) gets the node's zone and region labels, over its
// own, and no other node label; a node without them, or a missing node,
// adds nothing; --disable-admission-plugins turns the plugin off.
func TestPodTopologyLabels(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	topologyNode(t, cs, "zoned", map[string]string{corev1.LabelTopologyZone: "z1", corev1.LabelTopologyRegion: "r1", corev1.LabelHostname: "zoned"})
	topologyNode(t, cs, "plain", map[string]string{corev1.LabelHostname: "plain"})

	pod := simplePod("bound")
	pod.Labels = map[string]string{"app": "web", corev1.LabelTopologyZone: "mine"}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := bind(t, cs, "bound", "zoned")
	want := map[string]string{"app": "web", corev1.LabelTopologyZone: "z1", corev1.LabelTopologyRegion: "r1"}
	if !mapsEqual(got.Labels, want) {
		t.Errorf("pod bound to a zoned node: labels %v, want %v", got.Labels, want)
	}

	if _, err := cs.CoreV1().Pods("default").Create(ctx, simplePod("unzoned"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := bind(t, cs, "unzoned", "plain"); len(got.Labels) != 0 {
		t.Errorf("pod bound to a node without topology labels: labels %v", got.Labels)
	}

	direct := simplePod("direct")
	direct.Spec.NodeName = "zoned"
	created, err := cs.CoreV1().Pods("default").Create(ctx, direct, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Labels[corev1.LabelTopologyZone] != "z1" || created.Labels[corev1.LabelTopologyRegion] != "r1" {
		t.Errorf("pod created on a zoned node: labels %v", created.Labels)
	}
	missing := simplePod("nowhere")
	missing.Spec.NodeName = "no-such-node"
	if created, err := cs.CoreV1().Pods("default").Create(ctx, missing, metav1.CreateOptions{}); err != nil || len(created.Labels) != 0 {
		t.Errorf("pod created on a missing node: %v, labels %v", err, created.Labels)
	}

	_, cfg = startServerWith(t, Options{InMemory: true, DisableAdmissionPlugins: []string{"PodTopologyLabels"}})
	cs = clientset(t, cfg)
	topologyNode(t, cs, "zoned", map[string]string{corev1.LabelTopologyZone: "z1"})
	if _, err := cs.CoreV1().Pods("default").Create(ctx, simplePod("bound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := bind(t, cs, "bound", "zoned"); len(got.Labels) != 0 {
		t.Errorf("with PodTopologyLabels disabled: labels %v", got.Labels)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestPodResizeValidator: a resize of a bound pod beyond its node's
// allocatable cpu, or on a node that is not Linux, is refused with
// upstream's message and cause and changes nothing; one that fits passes.
func TestPodResizeValidator(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	res := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	for name, os := range map[string]string{"small": "linux", "win": "windows"} {
		topologyNode(t, cs, name, map[string]string{corev1.LabelOSStable: os})
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Capacity, node.Status.Allocatable = res("2", "1Gi"), res("1", "1Gi")
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods := cs.CoreV1().Pods("default")
	newPod := func(name, node string) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
			Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: res("100m", "32Mi"), Limits: res("200m", "64Mi")}}}}}
		pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pod
	}
	resize := func(pod *corev1.Pod, cpuRequest, cpuLimit string) error {
		want := pod.DeepCopy()
		want.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: res(cpuRequest, "32Mi"), Limits: res(cpuLimit, "64Mi")}
		_, err := pods.UpdateResize(ctx, pod.Name, want, metav1.UpdateOptions{})
		return err
	}
	causeOf := func(err error) metav1.CauseType {
		if s, ok := err.(apierrors.APIStatus); ok && s.Status().Details != nil && len(s.Status().Details.Causes) > 0 {
			return s.Status().Details.Causes[0].Type
		}
		return ""
	}

	pod := newPod("big", "small")
	err := resize(pod, "1500m", "2")
	if want := `pods "big" is forbidden: node didn't have enough allocatable resources: cpu, requested: 1500, allocatable: 1000`; err == nil || err.Error() != want || causeOf(err) != "NodeCapacity" {
		t.Errorf("resize beyond allocatable: %v (cause %q), want %q (NodeCapacity)", err, causeOf(err), want)
	}
	if got, err := pods.Get(ctx, "big", metav1.GetOptions{}); err != nil || got.Spec.Containers[0].Resources.Requests.Cpu().String() != "100m" {
		t.Errorf("refused resize changed the pod: %v %v", err, got.Spec.Containers[0].Resources)
	}
	if err := resize(pod, "500m", "1"); err != nil {
		t.Errorf("resize within allocatable: %v", err)
	}

	err = resize(newPod("onwin", "win"), "150m", "300m")
	if want := `pods "onwin" is forbidden: pod resize is only supported on linux nodes, node "win" is "windows"`; err == nil || err.Error() != want || causeOf(err) != "UnsupportedPlatform" {
		t.Errorf("resize on a windows node: %v (cause %q), want %q (UnsupportedPlatform)", err, causeOf(err), want)
	}
	// Unbound pods are not checked.
	unbound := newPod("unbound", "")
	if err := resize(unbound, "1500m", "2"); err != nil {
		t.Errorf("resize of an unbound pod: %v", err)
	}
}

// TestOwnerReferencesPermissionEnforcement: with the plugin enabled, a
// user who may not delete an object may not change its ownerReferences,
// and may make an ownerReference blockOwnerDeletion only if allowed to
// update the owner's finalizers, with upstream's messages; off by
// default.
func TestOwnerReferencesPermissionEnforcement(t *testing.T) {
	_, cfg := startServerWith(t, Options{InMemory: true, EnableAdmissionPlugins: []string{"OwnerReferencesPermissionEnforcement"}})
	admin := clientset(t, cfg)
	ctx := context.Background()
	grantAlice(t, admin, "cm-writer", rbacv1.PolicyRule{Verbs: []string{"get", "create", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}})
	alice := impersonating(t, cfg, "alice")
	cms := alice.CoreV1().ConfigMaps("default")

	owner, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(block bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(block)}
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", OwnerReferences: []metav1.OwnerReference{ref(false)}}}
	if err := untilNotForbidden(func() error { _, err := cms.Create(ctx, child, metav1.CreateOptions{}); return err }); err != nil {
		t.Fatalf("create with a non-blocking ownerReference: %v", err)
	}

	got, err := cms.Get(ctx, "child", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.OwnerReferences = nil
	_, err = cms.Update(ctx, got, metav1.UpdateOptions{})
	if prefix := `configmaps "child" is forbidden: cannot set an ownerRef on a resource you can't delete: `; err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("update of ownerReferences without delete: %v, want %q…", err, prefix)
	}
	got.OwnerReferences = []metav1.OwnerReference{ref(false)}
	got.Data = map[string]string{"k": "v"}
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Errorf("update leaving ownerReferences as they are: %v", err)
	}

	blocking := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "blocking", OwnerReferences: []metav1.OwnerReference{ref(true)}}}
	_, err = cms.Create(ctx, blocking, metav1.CreateOptions{})
	if prefix := `configmaps "blocking" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: `; err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("blockOwnerDeletion without update on the owner's finalizers: %v, want %q…", err, prefix)
	}
	unknown := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unknown", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "example.com/v1", Kind: "Nothing", Name: "x", UID: "u1", BlockOwnerDeletion: ptr.To(true)}}}}
	_, err = cms.Create(ctx, unknown, metav1.CreateOptions{})
	if want := `configmaps "unknown" is forbidden: cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion example.com/v1 Kind Nothing: no matches for kind "Nothing" in version "example.com/v1"`; err == nil || err.Error() != want {
		t.Errorf("blockOwnerDeletion of an unknown kind: %v, want %q", err, want)
	}
	grantAlice(t, admin, "cm-finalizers", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"configmaps/finalizers"}})
	if err := untilNotForbidden(func() error { _, err := cms.Create(ctx, blocking, metav1.CreateOptions{}); return err }); err != nil {
		t.Errorf("blockOwnerDeletion with update on configmaps/finalizers: %v", err)
	}
	// The admin may do all of it.
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, unknown, metav1.CreateOptions{}); err != nil {
		t.Errorf("admin: %v", err)
	}
}

// TestAdmissionPluginFlags: unknown names, names in both lists and
// upstream plugins plainkube does not have are refused at start with
// upstream's messages.
func TestAdmissionPluginFlags(t *testing.T) {
	for _, c := range []struct {
		enable, disable []string
		want            string
	}{
		{enable: []string{"NoSuchPlugin"}, want: `enable-admission-plugins plugin "NoSuchPlugin" is unknown`},
		{disable: []string{"Nope"}, want: `disable-admission-plugins plugin "Nope" is unknown`},
		{enable: []string{"Priority"}, disable: []string{"Priority"}, want: `[Priority] in enable-admission-plugins and disable-admission-plugins overlapped`},
		{enable: []string{"AlwaysPullImages"}, want: `enable-admission-plugins plugin "AlwaysPullImages" is not implemented by plainkube`},
	} {
		_, err := Start(context.Background(), Options{InMemory: true, DataDir: t.TempDir(), BindAddress: "127.0.0.1",
			EnableAdmissionPlugins: c.enable, DisableAdmissionPlugins: c.disable})
		if err == nil || err.Error() != c.want {
			t.Errorf("enable %v disable %v: %v, want %q", c.enable, c.disable, err, c.want)
		}
	}
}

// TestEventRateLimit: with EventRateLimit enabled and configured from the
// --admission-control-config-file, events of a namespace beyond its
// bucket's burst are refused with 429 and upstream's message (dry runs
// and other namespaces are not counted against it); without a
// configuration, or with one of another plugin, the server does not start.
func TestEventRateLimit(t *testing.T) {
	dir := t.TempDir()
	file := writeTestFile(t, dir, "admission.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventRateLimit
  path: eventratelimit.yaml
`)
	writeTestFile(t, dir, "eventratelimit.yaml", `apiVersion: eventratelimit.admission.k8s.io/v1alpha1
kind: Configuration
limits:
- type: Namespace
  qps: 1
  burst: 2
`)
	_, cfg := startServerWith(t, Options{InMemory: true, EnableAdmissionPlugins: []string{"EventRateLimit"}, AdmissionControlConfigFile: file})
	cs := clientset(t, cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	event := func(ns, name string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p"},
			Reason: "Test", Message: "m", Type: corev1.EventTypeNormal}
	}
	if _, err := cs.CoreV1().Events("default").Create(ctx, event("default", "dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	var err error
	created := 0
	for i := range 5 {
		if _, err = cs.CoreV1().Events("default").Create(ctx, event("default", "e"+strconv.Itoa(i)), metav1.CreateOptions{}); err != nil {
			break
		}
		created++
	}
	if want := "Too many requests: limit reached on type Namespace for key default"; err == nil || statusCode(err) != 429 || err.Error() != want {
		t.Fatalf("after %d events: %v (%d), want 429 %q", created, err, statusCode(err), want)
	}
	// Two, or three if a token came back meanwhile.
	if created < 2 || created > 3 {
		t.Errorf("%d events admitted before the limit, want the burst of 2", created)
	}
	if _, err := cs.CoreV1().Events("other").Create(ctx, event("other", "o"), metav1.CreateOptions{}); err != nil {
		t.Errorf("an event of another namespace: %v", err)
	}

	for _, c := range []struct{ file, want string }{
		{"", "EventRateLimit: limits: Invalid value: null: must not be empty"},
		{writeTestFile(t, dir, "podsecurity.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration: {}\n"),
			`plainkube reads no configuration of admission plugin "PodSecurity"`},
	} {
		_, err := Start(ctx, Options{InMemory: true, DataDir: t.TempDir(), BindAddress: "127.0.0.1", EnableAdmissionPlugins: []string{"EventRateLimit"}, AdmissionControlConfigFile: c.file})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config file %q: %v, want %q", c.file, err, c.want)
		}
	}
}

func writeTestFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
