package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"plainkube.dev/plainkube/internal/api/nodeutil"
	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/reconcile"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

func readyNodes(ctx context.Context, cs kubernetes.Interface) (int, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range nodes.Items {
		if nodeutil.IsReady(&nodes.Items[i]) {
			n++
		}
	}
	return n, nil
}

// withNodes is a client of o's cluster (16 connections) and the count of
// its Ready nodes, which workload (named in the error) needs at least one
// of.
func withNodes(ctx context.Context, o *Options, workload string) (kubernetes.Interface, int, error) {
	cs, err := clientFor(o.Config, 16)
	if err != nil {
		return nil, 0, err
	}
	nodes, err := readyNodes(ctx, cs)
	if err != nil {
		return nil, 0, err
	}
	if nodes == 0 {
		return nil, 0, fmt.Errorf("no Ready nodes: %s needs nodes (plainkube server --sim-nodes N, or plainkube sim --kubeconfig K --nodes N beside any cluster)", workload)
	}
	return cs, nodes, nil
}

// watchPods calls handle for every pod in ns as it is added or changes, from
// an informer: a list and then a watch that is re-established (with a new
// list) whenever the server ends it or answers with an error, as every
// client of a long watch must. It returns once the first list is in.
func watchPods(ctx context.Context, cs kubernetes.Interface, ns string, handle func(p *corev1.Pod, seen time.Time)) error {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	return watchInformer(ctx, f, f.Core().V1().Pods().Informer(), "pod", ns, handle)
}

// watchInformer starts f and calls handle for every object of type T that
// inf (one of f's) sees added or changed, once its first list is in.
func watchInformer[T runtime.Object](ctx context.Context, f informers.SharedInformerFactory, inf cache.SharedIndexInformer, what, ns string, handle func(obj T, seen time.Time)) error {
	on := func(obj interface{}) {
		if o, ok := obj.(T); ok {
			handle(o, time.Now())
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, n interface{}) { on(n) }}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !reconcile.WaitForCacheSync(ctx, inf.HasSynced) {
		return fmt.Errorf("%s informer in %s did not sync", what, ns)
	}
	return nil
}

// runDensity creates one Deployment of o.Replicas pods and waits until all
// are Running, reporting the time to all scheduled and all Running.
func runDensity(ctx context.Context, o *Options, r *Result) error {
	n := o.Replicas
	if n <= 0 {
		n = 10000
	}
	cs, nodes, err := withNodes(ctx, o, "density")
	if err != nil {
		return err
	}
	r.add("nodes", float64(nodes), "count")
	r.add("replicas", float64(n), "count")
	return withNamespace(ctx, cs, "bench-density-", func(ns string) error {
		wctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
		defer cancel()
		var mu sync.Mutex
		var start time.Time
		var allScheduled, allRunning time.Duration
		scheduled, running := map[string]bool{}, map[string]bool{}
		done := make(chan struct{})
		err := watchPods(wctx, cs, ns, func(p *corev1.Pod, seen time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if p.Spec.NodeName != "" && !scheduled[p.Name] {
				scheduled[p.Name] = true
				if len(scheduled) == n {
					allScheduled = seen.Sub(start)
				}
			}
			if p.Status.Phase == corev1.PodRunning && !running[p.Name] {
				running[p.Name] = true
				if len(running) == n {
					allRunning = seen.Sub(start)
					close(done)
				}
			}
		})
		if err != nil {
			return err
		}
		var rssBefore float64
		if len(o.ServerPIDs) > 0 {
			rssBefore = o.serverRSS()
			r.add("server_rss_before", rssBefore, "MiB")
		}
		replicas := int32(n)
		labels := map[string]string{"app": "density"}
		tmpl := benchPod("", labels)
		mu.Lock()
		start = time.Now()
		mu.Unlock()
		_, err = cs.AppsV1().Deployments(ns).Create(wctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "density"},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec}},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for waiting := true; waiting; {
			select {
			case <-done:
				waiting = false
			case <-tick.C:
				mu.Lock()
				o.progress("density: %d/%d scheduled, %d running", len(scheduled), n, len(running))
				mu.Unlock()
			case <-wctx.Done():
				mu.Lock()
				defer mu.Unlock()
				return fmt.Errorf("timed out with %d/%d pods scheduled, %d running", len(scheduled), n, len(running))
			}
		}
		mu.Lock()
		defer mu.Unlock()
		r.add("all_running", allRunning.Seconds(), "s")
		r.add("all_scheduled", allScheduled.Seconds(), "s")
		r.add("scheduling_throughput", float64(n)/allScheduled.Seconds(), "pods/s")
		if len(o.ServerPIDs) > 0 {
			// The growth of the server's memory over the pods it now stores.
			r.add("server_rss_per_pod", (o.serverRSS()-rssBefore)*1024/float64(n), "KiB")
		}
		return nil
	})
}

// runPodStartup creates o.Pods pods one by one (their image must be on the
// nodes) and measures creation → Running and creation → Ready.
func runPodStartup(ctx context.Context, o *Options, r *Result) error {
	n := o.Pods
	if n <= 0 {
		n = 20
	}
	image := o.PodImage
	if image == "" {
		image = "busybox:1.36"
	}
	cs, err := clientFor(o.Config, 8)
	if err != nil {
		return err
	}
	return withNamespace(ctx, cs, "bench-podstartup-", func(ns string) error {
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		var mu sync.Mutex
		created := map[string]time.Time{}
		var toRunning, toReady latencies
		runningSeen, readySeen := map[string]bool{}, map[string]bool{}
		done := make(chan struct{})
		err := watchPods(wctx, cs, ns, func(p *corev1.Pod, seen time.Time) {
			mu.Lock()
			defer mu.Unlock()
			t, ok := created[p.Name]
			if !ok {
				return
			}
			if p.Status.Phase == corev1.PodRunning && !runningSeen[p.Name] {
				runningSeen[p.Name] = true
				toRunning = append(toRunning, seen.Sub(t))
			}
			if podutil.IsReady(p) && !readySeen[p.Name] {
				readySeen[p.Name] = true
				toReady = append(toReady, seen.Sub(t))
				if len(readySeen) == n {
					close(done)
				}
			}
		})
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			p := benchPod(fmt.Sprintf("s-%03d", i), map[string]string{"app": "pod-startup"})
			p.Spec.Containers[0].Image = image
			p.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
			mu.Lock()
			created[p.Name] = time.Now()
			mu.Unlock()
			if _, err := cs.CoreV1().Pods(ns).Create(wctx, p, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		select {
		case <-done:
		case <-wctx.Done():
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("%d/%d pods became Ready within 3 minutes: pod-startup needs nodes that run containers, with image %s present", len(readySeen), n, image)
		}
		mu.Lock()
		defer mu.Unlock()
		toRunning.addTo(r, "create_to_running")
		toReady.addTo(r, "create_to_ready")
		return nil
	})
}
