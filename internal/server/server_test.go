package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/controllermanager"
)

// startServer runs an in-memory control plane over HTTPS for one test and
// returns an admin client config read from the kubeconfig it wrote.
func startServer(t *testing.T) (*Server, *rest.Config) {
	t.Helper()
	return startServerWith(t, Options{InMemory: true, DefaultAdmission: true,
		Components: []Component{func(ctx context.Context, env ComponentEnv) error {
			return controllermanager.Run(ctx, env.ConfigAs(auth.ControllerManagerUser()), controllermanager.Options{RootCA: env.CAPEM,
				ServiceAccountConfig: env.ServiceAccountConfig})
		}}})
}

// startServerWith runs a control plane with opts on a fresh data dir,
// listening on a free loopback port.
func startServerWith(t *testing.T, opts Options) (*Server, *rest.Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts.DataDir, opts.BindAddress, opts.Port = t.TempDir(), "127.0.0.1", 0
	s, err := Start(ctx, opts)
	if err != nil {
		cancel()
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { cancel(); s.Wait() })
	cfg, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	return s, cfg
}

func clientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func statusCode(err error) int32 {
	if se, ok := err.(apierrors.APIStatus); ok {
		return se.Status().Code
	}
	return 0
}

func TestBootstrapObjects(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	for _, ns := range SystemNamespaces {
		got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
		if got.Status.Phase != corev1.NamespaceActive {
			t.Errorf("namespace %s phase %q, want Active", ns, got.Status.Phase)
		}
	}
	svc, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.96.0.1" {
		t.Errorf("kubernetes service clusterIP %q, want 10.96.0.1", svc.Spec.ClusterIP)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.GitVersion, "v1.37.") {
		t.Errorf("gitVersion %q", v.GitVersion)
	}
}

func TestConfigMapCRUD(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"app": "x"}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.UID == "" || cm.ResourceVersion == "" || cm.CreationTimestamp.IsZero() {
		t.Fatalf("server-set metadata missing: %+v", cm.ObjectMeta)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	cm.Data["k"] = "v2"
	updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.ResourceVersion == cm.ResourceVersion {
		t.Fatal("resourceVersion did not change on update")
	}
	cm.Data["k"] = "stale"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v, want Conflict", err)
	}
	// An update that changes nothing writes nothing.
	same, err := cms.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil || same.ResourceVersion != updated.ResourceVersion {
		t.Fatalf("no-op update: rv %s -> %s, err %v", updated.ResourceVersion, same.ResourceVersion, err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "app=x"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list by label: %v items, err %v", len(list.Items), err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestConcurrentUpdatesOneConflict(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	leases := cs.CoordinationV1().Leases("default")
	holder := "a"
	l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 5; round++ {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				c := l.DeepCopy()
				h := fmt.Sprintf("holder-%d-%d", round, i)
				c.Spec.HolderIdentity = &h
				_, errs[i] = leases.Update(ctx, c, metav1.UpdateOptions{})
			}(i)
		}
		wg.Wait()
		conflicts := 0
		for _, err := range errs {
			if apierrors.IsConflict(err) {
				conflicts++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if conflicts != 1 {
			t.Fatalf("round %d: %d conflicts, want exactly 1", round, conflicts)
		}
		if l, err = leases.Get(ctx, "l", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWatchResumeReplaysInOrder(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	want := []string{"ADDED w1", "ADDED w2", "ADDED w3", "ADDED w4", "ADDED w5", "DELETED w1"}
	var got []string
	timeout := time.After(5 * time.Second)
	for len(got) < len(want) {
		select {
		case ev := <-w.ResultChan():
			name := ev.Object.(*corev1.ConfigMap).Name
			if !strings.HasPrefix(name, "w") {
				continue // e.g. kube-root-ca.crt, published by a controller meanwhile
			}
			got = append(got, fmt.Sprintf("%s %s", ev.Type, name))
		case <-timeout:
			t.Fatalf("timed out after %q", got)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestInformerWatchListSyncs(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 3; i++ {
		cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("i%d", i)}}, metav1.CreateOptions{})
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	inf := f.Core().V1().ConfigMaps().Informer()
	added := make(chan string, 100)
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) { added <- obj.(*corev1.ConfigMap).Name }})
	f.Start(ctx.Done())
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if !cache.WaitForCacheSync(sctx.Done(), inf.HasSynced) {
		t.Fatal("informer never synced")
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case n := <-added:
			if n == "later" {
				return
			}
		case <-deadline:
			t.Fatal("informer did not see a later create")
		}
	}
}

func TestDeploymentDefaultsGenerationAndStatus(t *testing.T) {
	// No controllers: the test writes status itself.
	_, cfg := startServerWith(t, Options{InMemory: true})
	cs := clientset(t, cfg)
	ctx := context.Background()
	deps := cs.AppsV1().Deployments("default")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "busybox"}}},
			},
		},
	}
	got, err := deps.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 1 || *got.Spec.Replicas != 1 || *got.Spec.RevisionHistoryLimit != 10 || *got.Spec.ProgressDeadlineSeconds != 600 ||
		got.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || got.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways ||
		got.Spec.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Fatalf("defaults not applied: %+v", got.Spec)
	}
	// A label change does not bump generation; a spec change does.
	got.Labels = map[string]string{"x": "y"}
	if got, err = deps.Update(ctx, got, metav1.UpdateOptions{}); err != nil || got.Generation != 1 {
		t.Fatalf("metadata update: generation %d, err %v", got.Generation, err)
	}
	three := int32(3)
	got.Spec.Replicas = &three
	got.Status.Replicas = 99 // ignored by the main resource
	if got, err = deps.Update(ctx, got, metav1.UpdateOptions{}); err != nil || got.Generation != 2 || got.Status.Replicas != 0 {
		t.Fatalf("spec update: generation %d status.replicas %d err %v", got.Generation, got.Status.Replicas, err)
	}
	got.Status.ObservedGeneration = 2
	got.Status.Replicas = 3
	got.Spec.Paused = true // ignored by /status
	if got, err = deps.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil || got.Status.Replicas != 3 || got.Spec.Paused || got.Generation != 2 {
		t.Fatalf("status update: %+v err %v", got.Status, err)
	}
	// /scale
	sc, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 3 || sc.Status.Selector != "app=web" {
		t.Fatalf("scale: %+v err %v", sc, err)
	}
	sc.Spec.Replicas = 5
	if _, err := deps.UpdateScale(ctx, "web", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err = deps.Get(ctx, "web", metav1.GetOptions{}); err != nil || *got.Spec.Replicas != 5 || got.Generation != 3 {
		t.Fatalf("after scale: replicas %d generation %d", *got.Spec.Replicas, got.Generation)
	}
	// `kubectl get deploy web --subresource=scale` asks for a Table: the
	// Scale's own columns, as upstream's printer has them.
	code, _, body := raw(t, cfg, "GET", "/apis/apps/v1/namespaces/default/deployments/web/scale", "", "application/json;as=Table;v=v1;g=meta.k8s.io", "")
	var table metav1.Table
	if err := json.Unmarshal([]byte(body), &table); code != 200 || err != nil || table.Kind != "Table" {
		t.Fatalf("scale table: %d %s", code, body)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Name,Desired,Available,Age" || len(table.Rows) != 1 || table.Rows[0].Cells[0] != "web" || table.Rows[0].Cells[1] != float64(5) {
		t.Errorf("scale table: %s", body)
	}
	// An invalid change is rejected with field causes and changes nothing.
	bad := got.DeepCopy()
	bad.Spec.Template.Labels = map[string]string{"app": "other"}
	_, err = deps.Update(ctx, bad, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.template.metadata.labels") {
		t.Fatalf("invalid update: %v", err)
	}
}

func TestNamespaceLifecycleOnCreate(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	_, err := cs.CoreV1().ConfigMaps("nope").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("create in missing namespace: %v, want NotFound", err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "gone", metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("deleted namespace: %+v err %v", ns.Status, err)
	}
	_, err = cs.CoreV1().ConfigMaps("gone").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("create in terminating namespace: %v, want Forbidden", err)
	}
	// Finalizing removes the namespace.
	ns.Spec.Finalizers = nil
	if _, err := cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace after finalize: %v", err)
	}
}

func TestFinalizersAndGracefulPodDelete(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "f", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "f", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := cms.Get(ctx, "f", metav1.GetOptions{})
	if err != nil || cm.DeletionTimestamp == nil || cm.Generation != 0 {
		t.Fatalf("object with finalizer: %v, deletionTimestamp %v", err, cm.DeletionTimestamp)
	}
	if _, err := cms.Patch(ctx, "f", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "f", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after removing finalizer: %v", err)
	}

	pods := cs.CoreV1().Pods("default")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || *got.DeletionGracePeriodSeconds != 30 || got.Generation != 2 {
		t.Fatalf("graceful delete (deletionTimestamp, grace 30, generation bumped to 2): %v %+v", err, got.ObjectMeta)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after force delete: %v", err)
	}
}

func TestServiceAllocation(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	seenIPs, seenPorts := map[string]bool{"10.96.0.1": true}, map[int32]bool{}
	for i := 0; i < 5; i++ {
		s, err := svcs.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i)},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "x"}, Ports: []corev1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip, np := s.Spec.ClusterIP, s.Spec.Ports[0].NodePort
		if ip == "" || seenIPs[ip] || np < 30000 || np > 32767 || seenPorts[np] {
			t.Fatalf("service %d: clusterIP %q nodePort %d (seen before or out of range)", i, ip, np)
		}
		if s.Spec.Ports[0].TargetPort.IntValue() != 80 || s.Spec.SessionAffinity != corev1.ServiceAffinityNone {
			t.Fatalf("service defaults: %+v", s.Spec)
		}
		seenIPs[ip], seenPorts[np] = true, true
	}
	// An explicit, taken IP is refused; after delete it can be had again.
	s0, _ := svcs.Get(ctx, "s0", metav1.GetOptions{})
	_, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dup"}, Spec: corev1.ServiceSpec{ClusterIP: s0.Spec.ClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("duplicate clusterIP: %v", err)
	}
	if err := svcs.Delete(ctx, "s0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dup"}, Spec: corev1.ServiceSpec{ClusterIP: s0.Spec.ClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("reuse released IP: %v", err)
	}
	// Each cluster IP is an IPAddress whose parent is its Service.
	ip, err := cs.NetworkingV1().IPAddresses().Get(ctx, s0.Spec.ClusterIP, metav1.GetOptions{})
	if err != nil || ip.Spec.ParentRef == nil || ip.Spec.ParentRef.Name != "dup" || ip.Spec.ParentRef.Resource != "services" ||
		ip.Labels[networkingv1.LabelManagedBy] != "ipallocator.k8s.io" || ip.Labels[networkingv1.LabelIPAddressFamily] != "IPv4" {
		t.Fatalf("IPAddress of dup: %+v %v", ip, err)
	}
	if _, err := cs.NetworkingV1().IPAddresses().Get(ctx, "10.96.0.1", metav1.GetOptions{}); err != nil {
		t.Fatalf("the kubernetes Service's IPAddress: %v", err)
	}
	// The server's range is the ServiceCIDR "kubernetes", Ready.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		sc, err := cs.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
		return err == nil && slices.Equal(sc.Spec.CIDRs, []string{"10.96.0.0/12"}) && meta.IsStatusConditionTrue(sc.Status.Conditions, "Ready"), nil
	}); err != nil {
		t.Fatalf("default ServiceCIDR: %v", err)
	}
	// An address outside every range is refused; a new ServiceCIDR adds one.
	outside := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "outside"}, Spec: corev1.ServiceSpec{ClusterIP: "10.200.0.10", Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := svcs.Create(ctx, outside, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "the provided IP (10.200.0.10) is not in the valid range. The range of valid IPs is 10.96.0.0/12") {
		t.Fatalf("an address outside the ranges: %v", err)
	}
	if _, err := cs.NetworkingV1().ServiceCIDRs().Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.200.0.0/24"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := svcs.Create(ctx, outside, metav1.CreateOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("an address of the new ServiceCIDR: %v", err)
	}
	if err := svcs.Delete(ctx, "outside", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().IPAddresses().Get(ctx, "10.200.0.10", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the deleted Service's IPAddress: %v", err)
	}
	// Bad ServiceCIDRs and IPAddresses are refused with upstream's messages.
	for _, c := range []struct {
		obj  *networkingv1.ServiceCIDR
		want string
	}{
		{&networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "none"}}, "spec.cidrs: Required value: at least one CIDR required"},
		{&networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "two-v4"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.1.0.0/24", "10.2.0.0/24"}}}, "may specify no more than one IP for each IP family"},
		{&networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "uncanonical"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.1.0.1/24"}}}, "must not have bits set beyond the prefix length"},
	} {
		if _, err := cs.NetworkingV1().ServiceCIDRs().Create(ctx, c.obj, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ServiceCIDR %s: %v, want %q", c.obj.Name, err, c.want)
		}
	}
	extra, err := cs.NetworkingV1().ServiceCIDRs().Get(ctx, "extra", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	extra.Spec.CIDRs = []string{"10.201.0.0/24"}
	if _, err := cs.NetworkingV1().ServiceCIDRs().Update(ctx, extra, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("changing a ServiceCIDR's range: %v", err)
	}
	parent := &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "x"}
	for name, want := range map[string]string{"10.0.0.010": "must not have leading 0s", "::FFFF": "must be in canonical form"} {
		_, err := cs.NetworkingV1().IPAddresses().Create(ctx, &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IPAddressSpec{ParentRef: parent}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("IPAddress %s: %v, want %q", name, err, want)
		}
	}
	if _, err := cs.NetworkingV1().IPAddresses().Create(ctx, &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "192.0.2.1"}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.parentRef: Required value") {
		t.Errorf("IPAddress without a parent: %v", err)
	}
}

func TestBadInputIsRejectedAndStoresNothing(t *testing.T) {
	s, cfg := startServer(t)
	cs := clientset(t, cfg)
	rc := cs.CoreV1().RESTClient()
	ctx := context.Background()
	cases := []struct {
		name, body, contentType string
		code                    int32
	}{
		{"malformed", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":`, "application/json", 400},
		{"wrong kind", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad1"}}`, "application/json", 400},
		{"wrong group", `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"bad2"}}`, "application/json", 400},
		{"other namespace", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad3","namespace":"kube-system"}}`, "application/json", 400},
		{"invalid name", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}`, "application/json", 422},
		{"invalid label", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad4","labels":{"a b":"c"}}}`, "application/json", 422},
		{"unknown field strict", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad5"},"bogus":1}`, "application/json", 400},
		{"unsupported media type", `x`, "text/plain", 415},
		{"empty", ``, "application/json", 400},
		{"too large", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad6"},"data":{"k":"` + strings.Repeat("x", 4<<20) + `"}}`, "application/json", 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := rc.Post().Namespace("default").Resource("configmaps").Param("fieldValidation", "Strict").
				SetHeader("Content-Type", c.contentType).Body([]byte(c.body)).Do(ctx)
			var code int
			res.StatusCode(&code)
			if int32(code) != c.code {
				t.Fatalf("code %d, want %d (%v)", code, c.code, res.Error())
			}
			if err := res.Error(); err == nil || statusCode(err) != c.code {
				t.Fatalf("error %v is not a Status with code %d", err, c.code)
			}
		})
	}
	list, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "bad") || cm.Name == "Bad_Name" {
			t.Fatalf("bad input stored %s/%s", cm.Namespace, cm.Name)
		}
	}
	// Bad selectors.
	if _, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "a in (b"}); statusCode(err) != 400 {
		t.Fatalf("bad label selector: %v", err)
	}
	if _, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=x"}); statusCode(err) != 400 {
		t.Fatalf("unsupported field selector: %v", err)
	}
	// Anonymous requests are refused with upstream's 403 Status, except
	// health; a credential that is not valid gets 401.
	pool := x509.NewCertPool()
	pool.AddCert(s.PKI.CACert)
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for path, want := range map[string]int{"/api": 403, "/api/v1/namespaces/default/pods": 403, "/readyz": 200} {
		resp, err := anon.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == 403 && !strings.Contains(string(body), `User \"system:anonymous\" cannot`)) {
			t.Fatalf("anonymous GET %s: %d %s, want %d", path, resp.StatusCode, body, want)
		}
	}
}

func TestListPagingAndFieldSelectors(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	for i := 0; i < 7; i++ {
		node := "n1"
		if i%2 == 1 {
			node = "n2"
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)}, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := metav1.ListOptions{Limit: 3}
	pages := 0
	for {
		l, err := cs.CoreV1().Pods("default").List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	if pages != 3 || strings.Join(names, ",") != "p0,p1,p2,p3,p4,p5,p6" {
		t.Fatalf("paging: %d pages, %v", pages, names)
	}
	l, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n2"})
	if err != nil || len(l.Items) != 3 {
		t.Fatalf("field selector: %d items, err %v", len(l.Items), err)
	}
	l, err = cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=p4,metadata.namespace=default"})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("metadata field selector: %d items, err %v", len(l.Items), err)
	}
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=p2", ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cs.CoreV1().Pods("default").Delete(ctx, "p1", metav1.DeleteOptions{})
	zero := int64(0)
	cs.CoreV1().Pods("default").Delete(ctx, "p2", metav1.DeleteOptions{GracePeriodSeconds: &zero})
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Deleted || ev.Object.(*corev1.Pod).Name != "p2" {
			t.Fatalf("watch event %s %v", ev.Type, ev.Object)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no DELETED event")
	}
}

// TestEventsInBothAPIs: events.k8s.io/v1 and core/v1 show the same events.
func TestEventsInBothAPIs(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	_, err := cs.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "core-made"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"},
		Reason:         "Tested", Message: "made through core/v1", Type: "Normal",
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := cs.EventsV1().Events("default").Get(ctx, "core-made", metav1.GetOptions{})
	if err != nil || ev.Note != "made through core/v1" || ev.Regarding.Name != "p" || ev.DeprecatedCount != 1 {
		t.Fatalf("core event through events.k8s.io: %+v, %v", ev, err)
	}
	_, err = cs.EventsV1().Events("default").Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "new-made"}, EventTime: metav1.NowMicro(),
		ReportingController: "example.com/test", ReportingInstance: "test-1", Action: "Testing",
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"},
		Reason:    "Tested", Note: "made through events.k8s.io", Type: "Normal",
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=p"})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("core list: %d items, %v", len(list.Items), err)
	}
	// core/v1's "source" is the reporting controller for an event without
	// source.component, as upstream's.
	list, err = cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "source=example.com/test"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "new-made" {
		t.Fatalf("core list by source: %d items, %v", len(list.Items), err)
	}
}

// TestUpdateDuringGracefulDeletion: a status update of a pod in graceful
// termination (what its kubelet sends while stopping it) does not delete it.
func TestUpdateDuringGracefulDeletion(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "g", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := pods.Get(ctx, "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "g", metav1.GetOptions{}); err != nil {
		t.Fatalf("status update deleted a terminating pod: %v", err)
	}
}

// TestFinalizerAfterGracefulDeletion: a pod with a finalizer, deleted
// gracefully and then by its kubelet with grace 0, goes away once the
// finalizer is removed.
func TestFinalizerAfterGracefulDeletion(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "f", Finalizers: []string{"example.com/keep"}}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "f", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "f", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	p, err := pods.Get(ctx, "f", metav1.GetOptions{})
	if err != nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("after the kubelet's delete: %v %v", err, p.DeletionGracePeriodSeconds)
	}
	if _, err := pods.Patch(ctx, "f", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "f", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod after its finalizer went: %v", err)
	}
}

// TestPodGeneration: as upstream since v1.34, a pod's generation starts at
// 1, binding it to a node does not change it, a spec update and the start
// of a graceful deletion each add one, and a status write keeps it.
func TestPodGeneration(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	deadline := int64(100)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "g", Generation: 100}, Spec: corev1.PodSpec{ActiveDeadlineSeconds: &deadline, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil || pod.Generation != 1 {
		t.Fatalf("create: %v, generation %d, want 1", err, pod.Generation)
	}
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if pod, err = pods.Get(ctx, "g", metav1.GetOptions{}); err != nil || pod.Generation != 1 || pod.Spec.NodeName != "n1" {
		t.Fatalf("after binding: %v, generation %d (want 1), node %q", err, pod.Generation, pod.Spec.NodeName)
	}
	*pod.Spec.ActiveDeadlineSeconds--
	if pod, err = pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil || pod.Generation != 2 {
		t.Fatalf("spec update: %v, generation %d, want 2", err, pod.Generation)
	}
	pod.Status.ObservedGeneration = 2
	if pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil || pod.Generation != 2 || pod.Status.ObservedGeneration != 2 {
		t.Fatalf("status update: %v, generation %d (want 2), observedGeneration %d", err, pod.Generation, pod.Status.ObservedGeneration)
	}
	// Tolerations replaced by a new one: DefaultTolerationSeconds puts its
	// two back, so the update only adds one (as upstream's conformance
	// spec does it).
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "foo", Operator: corev1.TolerationOpEqual, Value: "bar", Effect: corev1.TaintEffectNoSchedule}}
	if pod, err = pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil || pod.Generation != 3 || len(pod.Spec.Tolerations) != 3 {
		t.Fatalf("tolerations update: %v, generation %d (want 3), tolerations %v", err, pod.Generation, pod.Spec.Tolerations)
	}
	if err := pods.Delete(ctx, "g", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if pod, err = pods.Get(ctx, "g", metav1.GetOptions{}); err != nil || pod.Generation != 4 {
		t.Fatalf("graceful delete: %v, generation %d, want 4", err, pod.Generation)
	}
	// A second delete shortens nothing and adds nothing.
	if err := pods.Delete(ctx, "g", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if pod, err = pods.Get(ctx, "g", metav1.GetOptions{}); err != nil || pod.Generation != 4 {
		t.Fatalf("second delete: %v, generation %d, want 4", err, pod.Generation)
	}
}

// TestBindingsResource: a Binding created in a namespace's bindings binds
// the pod it names (upstream's older door to pods/binding); other verbs
// answer 405.
func TestBindingsResource(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods("default").Create(ctx, simplePod("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rest := cs.CoreV1().RESTClient()
	binding := `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"b"},"target":{"kind":"Node","name":"n1"}}`
	if err := rest.Post().Namespace("default").Resource("bindings").Body([]byte(binding)).Do(ctx).Error(); err != nil {
		t.Fatalf("create binding: %v", err)
	}
	pod, err := cs.CoreV1().Pods("default").Get(ctx, "b", metav1.GetOptions{})
	if err != nil || pod.Spec.NodeName != "n1" {
		t.Fatalf("pod after the binding: %v, node %q", err, pod.Spec.NodeName)
	}
	if err := rest.Post().Namespace("default").Resource("bindings").Body([]byte(binding)).Do(ctx).Error(); !apierrors.IsConflict(err) {
		t.Errorf("binding a bound pod again: %v, want 409", err)
	}
	if err := rest.Get().Namespace("default").Resource("bindings").Do(ctx).Error(); statusCode(err) != http.StatusMethodNotAllowed {
		t.Errorf("list bindings: %v, want 405", err)
	}
}

// TestServiceCIDRDeletion: a ServiceCIDR whose addresses a Service holds
// stays, Terminating, until the Service goes.
func TestServiceCIDRDeletion(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	cidrs := cs.NetworkingV1().ServiceCIDRs()
	if _, err := cidrs.Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.200.0.0/24"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll := func(what string, timeout time.Duration, cond func(sc *networkingv1.ServiceCIDR, err error) bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			return cond(cidrs.Get(ctx, "extra", metav1.GetOptions{})), nil
		}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll("finalizer and Ready", 10*time.Second, func(sc *networkingv1.ServiceCIDR, err error) bool {
		return err == nil && slices.Contains(sc.Finalizers, "networking.k8s.io/service-cidr-finalizer") && meta.IsStatusConditionTrue(sc.Status.Conditions, "Ready")
	})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "held"}, Spec: corev1.ServiceSpec{ClusterIP: "10.200.0.20", Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cidrs.Delete(ctx, "extra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("Terminating while the Service holds an address", 10*time.Second, func(sc *networkingv1.ServiceCIDR, err error) bool {
		c := meta.FindStatusCondition(sc.Status.Conditions, "Ready")
		return err == nil && c != nil && c.Status == metav1.ConditionFalse && c.Reason == "Terminating"
	})
	// A range being deleted hands out no more addresses.
	if _, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "late"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.200.0.21", Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("an address of a ServiceCIDR being deleted: %v", err)
	}
	if err := cs.CoreV1().Services("default").Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("gone once no address is left", 30*time.Second, func(_ *networkingv1.ServiceCIDR, err error) bool { return apierrors.IsNotFound(err) })
}
