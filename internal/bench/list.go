package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// createPods creates n pods in ns with the label group=i%10, concurrently.
func createPods(ctx context.Context, cs kubernetes.Interface, ns string, n int, o *Options) error {
	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				pod := benchPod(fmt.Sprintf("p-%06d", i), map[string]string{"group": fmt.Sprint(i % 10)})
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				if i%500 == 0 {
					o.progress("list: created %d/%d pods", i, n)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		return fmt.Errorf("%d pod creates failed, first: %v", failed.Load(), firstErr.Load())
	}
	return nil
}

// runList lists many pods four ways and reports latency and bytes.
func runList(ctx context.Context, o *Options, r *Result) error {
	n := o.ListPods
	if n <= 0 {
		n = 10000
	}
	cs, err := clientFor(o.Config, 64)
	if err != nil {
		return err
	}
	return withNamespace(ctx, cs, "bench-list-", func(ns string) error {
		t := time.Now()
		if err := createPods(ctx, cs, ns, n, o); err != nil {
			return err
		}
		r.add("create_pods_per_sec", float64(n)/time.Since(t).Seconds(), "pods/s")
		r.add("pods", float64(n), "count")
		rc := cs.CoreV1().RESTClient()
		measure := func(name string, req func() ([]byte, error)) error {
			var l latencies
			var size int
			for i := 0; i < 5; i++ {
				o.progress("list: %s %d/5", name, i+1)
				t := time.Now()
				b, err := req()
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				l = append(l, time.Since(t))
				size = len(b)
			}
			r.add(name+"_median", l.percentile(0.5), "ms")
			r.add(name+"_bytes", float64(size), "bytes")
			return nil
		}
		if err := measure("all_namespaces", func() ([]byte, error) { return rc.Get().Resource("pods").DoRaw(ctx) }); err != nil {
			return err
		}
		if err := measure("one_namespace", func() ([]byte, error) { return rc.Get().Namespace(ns).Resource("pods").DoRaw(ctx) }); err != nil {
			return err
		}
		if err := measure("label_selector", func() ([]byte, error) {
			return rc.Get().Namespace(ns).Resource("pods").Param("labelSelector", "group=3").DoRaw(ctx)
		}); err != nil {
			return err
		}
		return measure("paginated_500", func() ([]byte, error) {
			var total []byte
			cont := ""
			for {
				l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
				if err != nil {
					return nil, err
				}
				b, _ := l.Marshal()
				total = append(total, b...)
				if l.Continue == "" {
					return total, nil
				}
				cont = l.Continue
			}
		})
	})
}
