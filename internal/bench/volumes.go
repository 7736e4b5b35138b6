package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// runPVC creates o.Claims claims of the default StorageClass, each with a
// pod that mounts it, from 16 workers, and measures the time from the
// first create to all claims Bound and all pods Running. With a
// WaitForFirstConsumer class (upstream's usual default, plainkube's
// local-path) this is the scheduler's VolumeBinding, the provisioner and
// the PV binder together.
func runPVC(ctx context.Context, o *Options, r *Result) error {
	n := o.Claims
	if n <= 0 {
		n = 1000
	}
	cs, nodes, err := withNodes(ctx, o, "pvc")
	if err != nil {
		return err
	}
	r.add("nodes", float64(nodes), "count")
	r.add("claims", float64(n), "count")
	return withNamespace(ctx, cs, "bench-pvc-", func(ns string) error {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		var mu sync.Mutex
		var start time.Time
		var allBound, allRunning time.Duration
		bound, running := map[string]bool{}, map[string]bool{}
		done := make(chan struct{})
		finish := func() {
			if len(bound) == n && len(running) == n && allBound > 0 && allRunning > 0 {
				close(done)
			}
		}
		if err := watchClaims(wctx, cs, ns, func(pvc *corev1.PersistentVolumeClaim, seen time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if pvc.Status.Phase == corev1.ClaimBound && !bound[pvc.Name] {
				bound[pvc.Name] = true
				if len(bound) == n {
					allBound = seen.Sub(start)
					finish()
				}
			}
		}); err != nil {
			return err
		}
		if err := watchPods(wctx, cs, ns, func(p *corev1.Pod, seen time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if p.Status.Phase == corev1.PodRunning && !running[p.Name] {
				running[p.Name] = true
				if len(running) == n {
					allRunning = seen.Sub(start)
					finish()
				}
			}
		}); err != nil {
			return err
		}
		mu.Lock()
		start = time.Now()
		mu.Unlock()
		if err := createClaimsAndPods(wctx, cs, ns, n, 16); err != nil {
			return err
		}
		created := time.Since(start)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for waiting := true; waiting; {
			select {
			case <-done:
				waiting = false
			case <-tick.C:
				mu.Lock()
				o.progress("pvc: %d/%d bound, %d running", len(bound), n, len(running))
				mu.Unlock()
			case <-wctx.Done():
				mu.Lock()
				defer mu.Unlock()
				return fmt.Errorf("timed out with %d/%d claims bound, %d pods running", len(bound), n, len(running))
			}
		}
		mu.Lock()
		defer mu.Unlock()
		r.add("all_created", created.Seconds(), "s")
		r.add("all_bound", allBound.Seconds(), "s")
		r.add("all_running", allRunning.Seconds(), "s")
		return nil
	})
}

// createClaimsAndPods creates claim c-NNNN (100Mi, ReadWriteOnce, no
// class: the default) and pod p-NNNN mounting it, for n of each, from
// workers goroutines.
func createClaimsAndPods(ctx context.Context, cs kubernetes.Interface, ns string, n, workers int) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				claim := fmt.Sprintf("c-%04d", i)
				_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
					ObjectMeta: metav1.ObjectMeta{Name: claim},
					Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("100Mi")}},
					},
				}, metav1.CreateOptions{})
				if err == nil {
					p := benchPod(fmt.Sprintf("p-%04d", i), map[string]string{"app": "pvc"})
					p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
					p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
					_, err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// watchClaims is watchPods for PersistentVolumeClaims.
func watchClaims(ctx context.Context, cs kubernetes.Interface, ns string, handle func(pvc *corev1.PersistentVolumeClaim, seen time.Time)) error {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	return watchInformer(ctx, f, f.Core().V1().PersistentVolumeClaims().Informer(), "claim", ns, handle)
}
