package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

func readyNodes(ctx context.Context, cs kubernetes.Interface) (int, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, node := range nodes.Items {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// runDensity creates one Deployment of o.Replicas pods and waits until all
// are Running, reporting the time to all scheduled and all Running.
func runDensity(ctx context.Context, o *Options, r *Result) error {
	n := o.Replicas
	if n <= 0 {
		n = 10000
	}
	cs, err := clientFor(o.Config, 16)
	if err != nil {
		return err
	}
	nodes, err := readyNodes(ctx, cs)
	if err != nil {
		return err
	}
	if nodes == 0 {
		return errors.New("no Ready nodes: density needs nodes (plainkube server --sim-nodes N, or plainkube sim --kubeconfig K --nodes N beside any cluster)")
	}
	r.add("nodes", float64(nodes), "count")
	r.add("replicas", float64(n), "count")
	return withNamespace(ctx, cs, "bench-density-", func(ns string) error {
		wctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
		defer cancel()
		w, err := cs.CoreV1().Pods(ns).Watch(wctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		defer w.Stop()
		replicas := int32(n)
		labels := map[string]string{"app": "density"}
		tmpl := benchPod("", labels)
		var rssBefore float64
		if len(o.ServerPIDs) > 0 {
			rssBefore = o.serverRSS()
			r.add("server_rss_before", rssBefore, "MiB")
		}
		start := time.Now()
		_, err = cs.AppsV1().Deployments(ns).Create(wctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "density"},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec}},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		scheduled, running := map[string]bool{}, map[string]bool{}
		var allScheduled time.Duration
		for len(running) < n {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return fmt.Errorf("watch ended with %d/%d pods running", len(running), n)
				}
				p, isPod := ev.Object.(*corev1.Pod)
				if !isPod || ev.Type == watch.Deleted {
					continue
				}
				if p.Spec.NodeName != "" && !scheduled[p.Name] {
					scheduled[p.Name] = true
					if len(scheduled) == n {
						allScheduled = time.Since(start)
					}
				}
				if p.Status.Phase == corev1.PodRunning {
					running[p.Name] = true
				}
				if len(running)%500 == 0 {
					o.progress("density: %d/%d running", len(running), n)
				}
			case <-wctx.Done():
				return fmt.Errorf("timed out with %d/%d pods scheduled, %d running", len(scheduled), n, len(running))
			}
		}
		total := time.Since(start)
		r.add("all_running", total.Seconds(), "s")
		if len(o.ServerPIDs) > 0 {
			// The growth of the server's memory over the pods it now stores.
			r.add("server_rss_per_pod", (o.serverRSS()-rssBefore)*1024/float64(n), "KiB")
		}
		if allScheduled > 0 {
			r.add("all_scheduled", allScheduled.Seconds(), "s")
			r.add("scheduling_throughput", float64(n)/allScheduled.Seconds(), "pods/s")
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
		w, err := cs.CoreV1().Pods(ns).Watch(wctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		defer w.Stop()
		created := map[string]time.Time{}
		var toRunning, toReady latencies
		runningSeen, readySeen := map[string]bool{}, map[string]bool{}
		for i := 0; i < n; i++ {
			p := benchPod(fmt.Sprintf("s-%03d", i), map[string]string{"app": "pod-startup"})
			p.Spec.Containers[0].Image = image
			p.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
			t := time.Now()
			if _, err := cs.CoreV1().Pods(ns).Create(wctx, p, metav1.CreateOptions{}); err != nil {
				return err
			}
			created[p.Name] = t
		}
		for len(readySeen) < n {
			select {
			case ev := <-w.ResultChan():
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				now := time.Now()
				if p.Status.Phase == corev1.PodRunning && !runningSeen[p.Name] {
					runningSeen[p.Name] = true
					toRunning = append(toRunning, now.Sub(created[p.Name]))
				}
				if podReady(p) && !readySeen[p.Name] {
					readySeen[p.Name] = true
					toReady = append(toReady, now.Sub(created[p.Name]))
				}
			case <-wctx.Done():
				return fmt.Errorf("%d/%d pods became Ready within 3 minutes: pod-startup needs nodes that run containers, with image %s present", len(readySeen), n, image)
			}
		}
		toRunning.addTo(r, "create_to_running")
		toReady.addTo(r, "create_to_ready")
		return nil
	})
}
