package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/controllermanager"
)

// startEtcdServer runs a control plane on embedded etcd with the
// controller manager (for the resource quota controller) for one test.
func startEtcdServer(t *testing.T) *rest.Config {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", Port: 0,
		Components: []Component{func(ctx context.Context, env ComponentEnv) error {
			return controllermanager.Run(ctx, env.ConfigAs(auth.ControllerManagerUser()), controllermanager.Options{Informers: env.Informers,
				ServiceAccountConfig: env.ServiceAccountConfig})
		}}})
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
	return cfg
}

func namespaceFor(t *testing.T, cs kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func simplePod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
}

// quotaReady creates a quota and waits for the controller's first count.
func quotaReady(t *testing.T, cs kubernetes.Interface, ns, name string, hard corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	usedIs(t, cs, ns, name, nil)
}

// usedIs waits until the quota's status.used has every resource of
// spec.hard (and, if want is set, equals want).
func usedIs(t *testing.T, cs kubernetes.Interface, ns, name string, want corev1.ResourceList) {
	t.Helper()
	var last *corev1.ResourceQuota
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = q
		for k := range q.Spec.Hard {
			if _, ok := q.Status.Used[k]; !ok {
				return false, nil
			}
		}
		for k, v := range want {
			if u := q.Status.Used[k]; u.Cmp(v) != 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("quota %s/%s: status %+v, want used %v: %v", ns, name, last.Status, want, err)
	}
}

func TestResourceQuotaAdmission(t *testing.T) {
	cfg := startEtcdServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()

	t.Run("the third pod is refused", func(t *testing.T) {
		namespaceFor(t, cs, "quota-pods", nil)
		quotaReady(t, cs, "quota-pods", "pods", corev1.ResourceList{"pods": resource.MustParse("2")})
		pods := cs.CoreV1().Pods("quota-pods")
		for _, name := range []string{"p1", "p2"} {
			if _, err := pods.Create(ctx, simplePod(name), metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		// A dry run is checked but not charged.
		if _, err := pods.Create(ctx, simplePod("p3"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
			t.Errorf("dry run over quota: %v", err)
		}
		_, err := pods.Create(ctx, simplePod("p3"), metav1.CreateOptions{})
		want := `pods "p3" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("third pod: %v\nwant %s", err, want)
		}
		// The controller gives the unit back once a pod is gone.
		if err := pods.Delete(ctx, "p1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		usedIs(t, cs, "quota-pods", "pods", corev1.ResourceList{"pods": resource.MustParse("1")})
		if _, err := pods.Create(ctx, simplePod("p3"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("dry run with room: %v", err)
		}
		usedIs(t, cs, "quota-pods", "pods", corev1.ResourceList{"pods": resource.MustParse("1")})
		if _, err := pods.Create(ctx, simplePod("p3"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("p3 after p1 was deleted: %v", err)
		}
	})

	t.Run("ten concurrent creates, two units", func(t *testing.T) {
		namespaceFor(t, cs, "quota-race", nil)
		quotaReady(t, cs, "quota-race", "pods", corev1.ResourceList{"pods": resource.MustParse("2")})
		var wg sync.WaitGroup
		var mu sync.Mutex
		created, refused := 0, 0
		var other []error
		for i := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := cs.CoreV1().Pods("quota-race").Create(ctx, simplePod(fmt.Sprintf("r%d", i)), metav1.CreateOptions{})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					created++
				case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2"):
					refused++
				default:
					other = append(other, err)
				}
			}()
		}
		wg.Wait()
		if created != 2 || refused != 8 || len(other) > 0 {
			t.Fatalf("created %d, refused %d, other errors %v; want 2 and 8", created, refused, other)
		}
		list, err := cs.CoreV1().Pods("quota-race").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 2 {
			t.Fatalf("pods stored: %d, %v", len(list.Items), err)
		}
	})

	t.Run("count/configmaps", func(t *testing.T) {
		namespaceFor(t, cs, "quota-counts", nil)
		quotaReady(t, cs, "quota-counts", "objects", corev1.ResourceList{"count/configmaps": resource.MustParse("1")})
		cms := cs.CoreV1().ConfigMaps("quota-counts")
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{})
		want := `configmaps "b" is forbidden: exceeded quota: objects, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("second configmap: %v\nwant %s", err, want)
		}
	})

	t.Run("a cpu limit quota needs limits", func(t *testing.T) {
		namespaceFor(t, cs, "quota-cpu", nil)
		quotaReady(t, cs, "quota-cpu", "compute", corev1.ResourceList{"limits.cpu": resource.MustParse("1")})
		_, err := cs.CoreV1().Pods("quota-cpu").Create(ctx, simplePod("nolimit"), metav1.CreateOptions{})
		want := `pods "nolimit" is forbidden: failed quota: compute: must specify limits.cpu for: app`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("pod without limits: %v\nwant %s", err, want)
		}
	})
}

func TestLimitRangerAdmission(t *testing.T) {
	cfg := startEtcdServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	namespaceFor(t, cs, "limits", nil)
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:           corev1.LimitTypeContainer,
		Default:        corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("256Mi")},
		DefaultRequest: corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("128Mi")},
		Max:            corev1.ResourceList{"cpu": resource.MustParse("1")},
	}}}}
	if _, err := cs.CoreV1().LimitRanges("limits").Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("limits")
	p, err := pods.Create(ctx, simplePod("filled"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Spec.Containers[0].Resources
	if r.Requests.Cpu().String() != "100m" || r.Requests.Memory().String() != "128Mi" || r.Limits.Cpu().String() != "500m" || r.Limits.Memory().String() != "256Mi" {
		t.Errorf("resources filled in: %+v", r)
	}
	if got, want := p.Annotations["kubernetes.io/limit-ranger"], "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"; got != want {
		t.Errorf("annotation %q, want %q", got, want)
	}
	big := simplePod("big")
	big.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"cpu": resource.MustParse("2")}
	_, err = pods.Create(ctx, big, metav1.CreateOptions{})
	want := `pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("too large a limit: %v\nwant %s", err, want)
	}
}

func TestPodSecurityAdmission(t *testing.T) {
	cfg := startEtcdServer(t)
	w := &warnings{}
	cfg.WarningHandler = w
	cs := clientset(t, cfg)
	ctx := context.Background()
	privileged := func(name string) *corev1.Pod {
		p := simplePod(name)
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		return p
	}
	namespaceFor(t, cs, "restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	_, err := cs.CoreV1().Pods("restricted").Create(ctx, privileged("priv"), metav1.CreateOptions{})
	want := `pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged (container "app" must not set securityContext.privileged=true), ` +
		`allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), ` +
		`runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("privileged pod in a restricted namespace: %v\nwant %s", err, want)
	}
	namespaceFor(t, cs, "warned", map[string]string{"pod-security.kubernetes.io/warn": "baseline"})
	w.take()
	if _, err := cs.CoreV1().Pods("warned").Create(ctx, privileged("priv"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("warn only: %v", err)
	}
	wantWarning := `would violate PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)`
	if got := w.take(); len(got) != 1 || got[0] != wantWarning {
		t.Errorf("warnings %q, want %q", got, wantWarning)
	}
}
