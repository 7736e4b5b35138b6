package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// clientFor returns a clientset without client-side rate limits, with
// enough connections for conc concurrent requests.
func clientFor(cfg *rest.Config, conc int) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = -1, conc
	return kubernetes.NewForConfig(c)
}

// withNamespace creates a fresh namespace for a workload and deletes it after.
func withNamespace(ctx context.Context, cs kubernetes.Interface, prefix string, f func(ns string) error) error {
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating namespace: %w", err)
	}
	// The namespace controller removes everything in it, in the background.
	defer cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	waitForDefaultServiceAccount(ctx, cs, ns.Name, 10*time.Second)
	return f(ns.Name)
}

// waitForDefaultServiceAccount waits, up to budget, for the controller
// manager to create the namespace's "default" ServiceAccount: an upstream
// API server's ServiceAccount admission refuses pods until it exists. A
// cluster that never creates it costs the budget and nothing else.
func waitForDefaultServiceAccount(ctx context.Context, cs kubernetes.Interface, ns string, budget time.Duration) bool {
	deadline := time.Now().Add(budget)
	for {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func benchPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mustQuantity("10m"), corev1.ResourceMemory: mustQuantity("16Mi")}},
		}}},
	}
}

// runCRUD does create, get, update, list and delete cycles on ConfigMaps
// and Pods (o.CRUDKinds: Secrets too) at each concurrency for o.Duration, recording each verb's latency.
func runCRUD(ctx context.Context, o *Options, r *Result) error {
	levels := o.Concurrency
	if len(levels) == 0 {
		levels = []int{1, 16, 64}
	}
	d := o.Duration
	if d <= 0 {
		d = 5 * time.Second
	}
	kinds := o.CRUDKinds
	if len(kinds) == 0 {
		kinds = []string{"configmaps", "pods"}
	}
	for _, kind := range kinds {
		for _, conc := range levels {
			cs, err := clientFor(o.Config, conc)
			if err != nil {
				return err
			}
			o.progress("crud: %s at concurrency %d", kind, conc)
			err = withNamespace(ctx, cs, "bench-crud-", func(ns string) error {
				return crudLevel(ctx, cs, ns, kind, conc, d, r)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func crudLevel(ctx context.Context, cs kubernetes.Interface, ns, kind string, conc int, d time.Duration, r *Result) error {
	verbs := []string{"create", "get", "update", "list", "delete"}
	var mu sync.Mutex
	lat := map[string]latencies{}
	var errs, ops, conflicts int
	var firstErr error
	conflict := func() { mu.Lock(); conflicts++; mu.Unlock() }
	record := func(verb string, start time.Time, err error) bool {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs++
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", verb, err)
			}
			return false
		}
		ops++
		lat[verb] = append(lat[verb], time.Since(start))
		return true
	}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				name := fmt.Sprintf("o-%d-%d", w, i)
				crudCycle(ctx, cs, ns, kind, name, record, conflict)
			}
		}(w)
	}
	wg.Wait()
	prefix := fmt.Sprintf("%s_c%d", kind, conc)
	r.add(prefix+"_ops_per_sec", float64(ops)/d.Seconds(), "ops/s")
	r.add(prefix+"_errors", float64(errs), "count")
	r.add(prefix+"_update_conflicts_retried", float64(conflicts), "count")
	if firstErr != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: %d errors, the first: %v", prefix, errs, firstErr))
	}
	for _, v := range verbs {
		lat[v].addTo(r, prefix+"_"+v)
	}
	return nil
}

// updateWithRetry applies change to obj and updates it. A conflict (another
// writer, such as a scheduler reporting the pod unschedulable, changed the
// object since it was read) is counted, the object read again and the update
// retried, up to 5 times, as a client would; the latency recorded is that
// of the update that answered.
func updateWithRetry[T any](ctx context.Context, obj T,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
	change func(T), record func(string, time.Time, error) bool, conflict func()) bool {
	name := any(obj).(metav1.Object).GetName()
	for attempt := 0; ; attempt++ {
		change(obj)
		t := time.Now()
		_, err := update(ctx, obj, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) || attempt == 5 {
			return record("update", t, err)
		}
		conflict()
		t = time.Now()
		if obj, err = get(ctx, name, metav1.GetOptions{}); !record("get", t, err) {
			return false
		}
	}
}

// crudClient is a typed client of one kind (objects T, lists L).
type crudClient[T, L any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	List(context.Context, metav1.ListOptions) (L, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

func crudCycle(ctx context.Context, cs kubernetes.Interface, ns, kind, name string, record func(string, time.Time, error) bool, conflict func()) {
	switch kind {
	case "configmaps":
		cycle(ctx, cs.CoreV1().ConfigMaps(ns), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}},
			func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"k": "v2"} }, record, conflict)
	case "secrets":
		cycle(ctx, cs.CoreV1().Secrets(ns), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"k": []byte("v")}},
			func(s *corev1.Secret) { s.Data = map[string][]byte{"k": []byte("v2")} }, record, conflict)
	case "pods":
		cycle(ctx, cs.CoreV1().Pods(ns), benchPod(name, map[string]string{"app": "crud"}),
			func(p *corev1.Pod) { p.Labels["step"] = "updated" }, record, conflict)
	}
}

// cycle creates obj, gets it, updates it with change, lists its kind and
// deletes it, recording each verb.
func cycle[T, L any](ctx context.Context, c crudClient[T, L], obj T, change func(T), record func(string, time.Time, error) bool, conflict func()) {
	name := any(obj).(metav1.Object).GetName()
	t := time.Now()
	obj, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if !record("create", t, err) {
		return
	}
	t = time.Now()
	obj, err = c.Get(ctx, name, metav1.GetOptions{})
	if !record("get", t, err) {
		return
	}
	updateWithRetry(ctx, obj, c.Get, c.Update, change, record, conflict)
	t = time.Now()
	_, err = c.List(ctx, metav1.ListOptions{Limit: 50})
	record("list", t, err)
	zero := int64(0)
	t = time.Now()
	record("delete", t, c.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
}
