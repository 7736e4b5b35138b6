package server

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission"
)

// admissionCall is what a recording plugin saw of one phase of a request.
type admissionCall struct {
	Phase, Op, Kind, Resource, Sub, Name string
	Object, OldObject, Options           string // Go types, "" for nil
	DryRun, User                         bool
}

// recorder is an admission plugin that records every call in one
// namespace, warns on every create and, on a ConfigMap named
// "made-invalid", sets a label value the resource's validation refuses.
type recorder struct {
	ns    string
	mu    sync.Mutex
	calls []admissionCall
}

func typeName(o any) string {
	if o == nil || reflect.ValueOf(o).IsNil() {
		return ""
	}
	return reflect.TypeOf(o).String()
}

func (r *recorder) record(phase string) admission.MutateFunc {
	return func(_ context.Context, a *admission.Attributes) error {
		if a.Namespace != r.ns {
			return nil
		}
		r.mu.Lock()
		r.calls = append(r.calls, admissionCall{Phase: phase, Op: string(a.Operation), Kind: a.Kind.String(), Resource: a.Resource.String(),
			Sub: a.Subresource, Name: a.Name, Object: typeName(a.Object), OldObject: typeName(a.OldObject), Options: typeName(a.Options),
			DryRun: a.DryRun, User: a.User != nil && a.User.Name != ""})
		r.mu.Unlock()
		if phase == "mutate" && a.Operation == admission.Create {
			a.AddWarning("recorded a create of " + a.Resource.Resource)
			if cm, ok := a.Object.(*corev1.ConfigMap); ok && cm.Name == "made-invalid" {
				cm.Labels = map[string]string{"bad": "not a valid label value!"}
			}
		}
		return nil
	}
}

func (r *recorder) plugin() admission.Plugin {
	return admission.Plugin{Name: "Recorder", Subresources: []string{"*"}, Mutate: r.record("mutate"), Validate: admission.ValidateFunc(r.record("validate"))}
}

// take returns the calls recorded since the last take.
func (r *recorder) take() []admissionCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// warnings collects the Warning headers a client receives.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, msg)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	g := w.got
	w.got = nil
	return g
}

// TestAdmissionChainSeesEveryWrite runs a control plane over embedded etcd
// with a recording plugin at the end of the chain and checks what each
// kind of write shows it: both phases, in order, with the operation, kind
// and resource at the request's version, the subresource, name, objects,
// options, dry run and user.
func TestAdmissionChainSeesEveryWrite(t *testing.T) {
	rec := &recorder{ns: "adm"}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", Port: 0, ExtraAdmission: []admission.Plugin{rec.plugin()}})
	if err != nil {
		cancel()
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { cancel(); s.Wait() })
	cfg, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	warned := &warnings{}
	cfg.WarningHandler = warned
	cs := clientset(t, cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "adm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	const (
		cmKind, cmRes       = "/v1, Kind=ConfigMap", "/v1, Resource=configmaps"
		podKind, podRes     = "/v1, Kind=Pod", "/v1, Resource=pods"
		cmType, podType     = "*v1.ConfigMap", "*v1.Pod"
		createOpts, updOpts = "*v1.CreateOptions", "*v1.UpdateOptions"
		delOpts             = "*v1.DeleteOptions"
	)
	both := func(c admissionCall) []admissionCall {
		m, v := c, c
		m.Phase, v.Phase, m.User, v.User = "mutate", "validate", true, true
		return []admissionCall{m, v}
	}
	expect := func(step string, want ...admissionCall) {
		t.Helper()
		got := rec.take()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: admission saw\n%s\nwant\n%s", step, describeCalls(got), describeCalls(want))
		}
	}
	cms := cs.CoreV1().ConfigMaps("adm")

	// create, then a warning comes back.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"set": "x"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("create", both(admissionCall{Op: "CREATE", Kind: cmKind, Resource: cmRes, Name: "a", Object: cmType, Options: createOpts})...)
	if w := warned.take(); len(w) != 1 || w[0] != "recorded a create of configmaps" {
		t.Errorf("warnings %q", w)
	}
	// generateName: no name yet when admitted.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "g-", Labels: map[string]string{"set": "x"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("create under generateName", both(admissionCall{Op: "CREATE", Kind: cmKind, Resource: cmRes, Object: cmType, Options: createOpts})...)
	// dry run: admitted, not stored.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	expect("dry-run create", both(admissionCall{Op: "CREATE", Kind: cmKind, Resource: cmRes, Name: "dry", Object: cmType, Options: createOpts, DryRun: true})...)
	if _, err := cms.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry-run object stored: %v", err)
	}
	// A mutation is validated by the resource's validation, which runs after.
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "made-invalid"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.labels") {
		t.Errorf("create made invalid by a mutating plugin: %v, want 422 on metadata.labels", err)
	}
	expect("create made invalid", admissionCall{Phase: "mutate", Op: "CREATE", Kind: cmKind, Resource: cmRes, Name: "made-invalid", Object: cmType, Options: createOpts, User: true})

	// update, patch, apply.
	cm, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"k": "v"}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	update := admissionCall{Op: "UPDATE", Kind: cmKind, Resource: cmRes, Name: "a", Object: cmType, OldObject: cmType, Options: updOpts}
	expect("update", both(update)...)
	if _, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"w"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("patch", both(update)...)
	apply := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k2":"v"}}`)
	if _, err := cms.Patch(ctx, "a", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	expect("apply", both(update)...)
	apply = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","labels":{"set":"x"}}}`)
	if _, err := cms.Patch(ctx, "b", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	expect("apply that creates", both(admissionCall{Op: "CREATE", Kind: cmKind, Resource: cmRes, Name: "b", Object: cmType, Options: createOpts})...)
	warned.take()

	// delete and deletecollection: one call per object.
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	del := admissionCall{Op: "DELETE", Kind: cmKind, Resource: cmRes, Name: "a", OldObject: cmType, Options: delOpts}
	expect("delete", both(del)...)
	left, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "set=x"})
	if err != nil || len(left.Items) != 2 {
		t.Fatalf("left: %v %v", left, err)
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "set=x"}); err != nil {
		t.Fatal(err)
	}
	var want []admissionCall
	for _, item := range left.Items {
		d := del
		d.Name = item.Name
		want = append(want, both(d)...)
	}
	expect("deletecollection", want...)

	// A pod: create, status, binding, a connect, eviction.
	pods := cs.CoreV1().Pods("adm")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if pod, err = pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("pod create", both(admissionCall{Op: "CREATE", Kind: podKind, Resource: podRes, Name: "p", Object: podType, Options: createOpts})...)
	pod.Status.Message = "hello"
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("status update", both(admissionCall{Op: "UPDATE", Kind: podKind, Resource: podRes, Sub: "status", Name: "p", Object: podType, OldObject: podType, Options: updOpts})...)
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("pods/binding", both(admissionCall{Op: "CREATE", Kind: "/v1, Kind=Binding", Resource: podRes, Sub: "binding", Name: "p", Object: "*v1.Binding", Options: createOpts})...)
	// The connect is admitted, then fails: node n1 does not exist.
	err = cs.CoreV1().RESTClient().Post().Namespace("adm").Resource("pods").Name("p").SubResource("exec").
		Param("command", "ls").Param("stdout", "true").Do(ctx).Error()
	if err == nil {
		t.Fatal("exec on a pod of a missing node succeeded")
	}
	expect("pods/exec", both(admissionCall{Op: "CONNECT", Kind: "/v1, Kind=PodExecOptions", Resource: podRes, Sub: "exec", Name: "p", Object: "*v1.PodExecOptions"})...)
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p"}, DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}}
	if err := pods.EvictV1(ctx, eviction); err != nil {
		t.Fatal(err)
	}
	expect("pods/eviction", both(admissionCall{Op: "CREATE", Kind: "policy/v1, Kind=Eviction", Resource: podRes, Sub: "eviction", Name: "p", Object: "*v1.Eviction", Options: createOpts})...)

	// serviceaccounts/token.
	if _, err := cs.CoreV1().ServiceAccounts("adm").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.take()
	if _, err := cs.CoreV1().ServiceAccounts("adm").CreateToken(ctx, "sa", &authenticationv1.TokenRequest{}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("serviceaccounts/token", both(admissionCall{Op: "CREATE", Kind: "authentication.k8s.io/v1, Kind=TokenRequest", Resource: "/v1, Resource=serviceaccounts",
		Sub: "token", Name: "sa", Object: "*v1.TokenRequest", Options: createOpts})...)

	// scale: admitted as a Scale.
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: pod.Spec}}}
	if _, err := cs.AppsV1().Deployments("adm").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.take()
	if _, err := cs.AppsV1().Deployments("adm").Patch(ctx, "d", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}
	expect("deployments/scale", both(admissionCall{Op: "UPDATE", Kind: "autoscaling/v1, Kind=Scale", Resource: "apps/v1, Resource=deployments",
		Sub: "scale", Name: "d", Object: "*v1.Scale", OldObject: "*v1.Scale", Options: updOpts})...)

	// A custom resource, through its deprecated version: kind and resource
	// at that version.
	createCRD(t, cfg, loadCRD(t, "testdata/widgets-crd.yaml"))
	rec.take()
	widgets := dynamicClient(t, cfg).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}).Namespace("adm")
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "spec": map[string]any{"replicas": int64(1)}}}
	var created *unstructured.Unstructured
	err = pollFor(ctx, func() error { created, err = widgets.Create(ctx, w, metav1.CreateOptions{}); return err })
	if err != nil {
		t.Fatal(err)
	}
	rec.take()
	created.Object["spec"] = map[string]any{"replicas": int64(2)}
	if _, err := widgets.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("custom resource update", both(admissionCall{Op: "UPDATE", Kind: "example.com/v1beta1, Kind=Widget", Resource: "example.com/v1beta1, Resource=widgets",
		Name: "w", Object: "*unstructured.Unstructured", OldObject: "*unstructured.Unstructured", Options: updOpts})...)
}

// pollFor retries f for a few seconds while it fails (a CRD's resource
// is served shortly after it is established).
func pollFor(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func describeCalls(cs []admissionCall) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  %s %s kind=%s res=%s sub=%q name=%q obj=%s old=%s opts=%s dry=%v user=%v\n",
			c.Phase, c.Op, c.Kind, c.Resource, c.Sub, c.Name, c.Object, c.OldObject, c.Options, c.DryRun, c.User)
	}
	return b.String()
}

var _ rest.WarningHandler = (*warnings)(nil)

// TestBuiltInAdmissionPlugins checks the chain's plugins through the API:
// the immortal namespaces, priorities from the built-in classes the server
// creates, the not-ready taint of new nodes and the default StorageClass.
func TestBuiltInAdmissionPlugins(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()

	err := cs.CoreV1().Namespaces().Delete(ctx, "default", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `namespaces "default" is forbidden: this namespace may not be deleted` {
		t.Errorf("delete namespace default: %v", err)
	}
	for name, value := range map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000} {
		pc, err := cs.SchedulingV1().PriorityClasses().Get(ctx, name, metav1.GetOptions{})
		if err != nil || pc.Value != value {
			t.Errorf("priority class %s: %+v %v", name, pc, err)
		}
	}
	if err := cs.SchedulingV1().PriorityClasses().Delete(ctx, "system-node-critical", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete system-node-critical: %v, want 403", err)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "critical"}, Spec: corev1.PodSpec{PriorityClassName: "system-node-critical",
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	got, err := cs.CoreV1().Pods("kube-system").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 2000001000 || got.Spec.PreemptionPolicy == nil || *got.Spec.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("pod priority %v, preemption %v", got.Spec.Priority, got.Spec.PreemptionPolicy)
	}
	pod.Name, pod.Spec.PriorityClassName = "unknown-class", "nope"
	_, err = cs.CoreV1().Pods("kube-system").Create(ctx, pod, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `pods "unknown-class" is forbidden: no PriorityClass with name nope was found` {
		t.Errorf("pod of an unknown class: %v", err)
	}

	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != corev1.TaintNodeNotReady || node.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("new node's taints %+v", node.Spec.Taints)
	}

	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "example.com/fast"}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	var claim *corev1.PersistentVolumeClaim
	// The class is read from the watch cache, which may lag its create.
	// Of two default classes (the server's local-path and this one) the
	// newest is taken, as upstream.
	err = pollFor(ctx, func() error {
		var err error
		pvc.Name = fmt.Sprintf("data-%d", time.Now().UnixNano())
		if claim, err = cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err == nil &&
			(claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != "fast") {
			err = fmt.Errorf("class %v", claim.Spec.StorageClassName)
		}
		return err
	})
	if err != nil || *claim.Spec.StorageClassName != "fast" {
		t.Errorf("claim's class: %v %v", claim, err)
	}
}
