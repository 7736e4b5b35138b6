package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/reconcile"
)

// runChurn creates, updates and deletes ConfigMaps from 8 workers for
// o.Duration while an informer watches them. Every failed request is an
// error, and so is any difference between the informer's final state and
// a fresh list. The lag is from a write's response to the informer seeing it.
func runChurn(ctx context.Context, o *Options, r *Result) error {
	d := o.Duration
	if d <= 0 {
		d = 20 * time.Second
	}
	cs, err := clientFor(o.Config, 16)
	if err != nil {
		return err
	}
	return withNamespace(ctx, cs, "bench-churn-", func(ns string) error {
		ictx, cancel := context.WithCancel(ctx)
		defer cancel()
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
		inf := f.Core().V1().ConfigMaps().Informer()
		var mu sync.Mutex
		written := map[string]time.Time{} // name/resourceVersion → response time
		var maxLag time.Duration
		var lags latencies
		seen := func(obj interface{}) {
			cm, ok := reconcile.DeletedObject[*corev1.ConfigMap](obj)
			if !ok || cm == nil {
				return
			}
			now := time.Now()
			mu.Lock()
			if t, ok := written[cm.Name+"/"+cm.ResourceVersion]; ok {
				lag := max(0, now.Sub(t))
				lags = append(lags, lag)
				maxLag = max(maxLag, lag)
			}
			mu.Unlock()
		}
		inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: seen, UpdateFunc: func(_, n interface{}) { seen(n) },
		})
		f.Start(ictx.Done())
		if !reconcile.WaitForCacheSync(ictx, inf.HasSynced) {
			return fmt.Errorf("informer did not sync")
		}
		var ops, errs atomic.Int64
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				c := cs.CoreV1().ConfigMaps(ns)
				for time.Now().Before(deadline) && ctx.Err() == nil {
					name := fmt.Sprintf("c-%d-%d", w, rng.IntN(50))
					var rv string
					var err error
					switch rng.IntN(3) {
					case 0:
						var cm *corev1.ConfigMap
						cm, err = c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
						if apierrors.IsAlreadyExists(err) {
							err = nil
						} else if err == nil {
							rv = cm.ResourceVersion
						}
					case 1:
						var cm *corev1.ConfigMap
						cm, err = c.Get(ctx, name, metav1.GetOptions{})
						if err == nil {
							cm.Data = map[string]string{"n": fmt.Sprint(rng.Int())}
							cm, err = c.Update(ctx, cm, metav1.UpdateOptions{})
							if err == nil {
								rv = cm.ResourceVersion
							}
						}
						if apierrors.IsNotFound(err) {
							err = nil
						}
					case 2:
						err = c.Delete(ctx, name, metav1.DeleteOptions{})
						if apierrors.IsNotFound(err) {
							err = nil
						}
					}
					ops.Add(1)
					if err != nil {
						errs.Add(1)
						continue
					}
					if rv != "" {
						mu.Lock()
						written[name+"/"+rv] = time.Now()
						mu.Unlock()
					}
				}
			}(w)
		}
		wg.Wait()
		// Let the informer catch up, then compare it with a fresh list.
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		mismatches := 0
		for i := 0; i < 100; i++ {
			mismatches = diffStore(inf.GetStore(), list.Items)
			if mismatches == 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		r.add("ops", float64(ops.Load()), "count")
		r.add("ops_per_sec", float64(ops.Load())/d.Seconds(), "ops/s")
		r.add("errors", float64(errs.Load()+int64(mismatches)), "count")
		r.add("informer_mismatches", float64(mismatches), "count")
		lags.addTo(r, "event_lag")
		r.add("event_lag_max", ms(maxLag), "ms")
		return nil
	})
}

// diffStore counts objects whose resourceVersion differs between the
// informer's store and a list.
func diffStore(store cache.Store, items []corev1.ConfigMap) int {
	want := map[string]string{}
	for _, cm := range items {
		want[cm.Name] = cm.ResourceVersion
	}
	got := map[string]string{}
	for _, obj := range store.List() {
		cm := obj.(*corev1.ConfigMap)
		got[cm.Name] = cm.ResourceVersion
	}
	n := 0
	for k, v := range want {
		if got[k] != v {
			n++
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			n++
		}
	}
	return n
}
