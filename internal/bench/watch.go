package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// runWatch opens o.Watchers watches on ConfigMaps in one namespace, writes
// o.Events ConfigMaps one after another and measures, for every watcher and
// event, the time from the write's response to the event's arrival.
func runWatch(ctx context.Context, o *Options, r *Result) error {
	watchers, events := o.Watchers, o.Events
	if watchers <= 0 {
		watchers = 1000
	}
	if events <= 0 {
		events = 100
	}
	cs, err := clientFor(o.Config, watchers+8)
	if err != nil {
		return err
	}
	return withNamespace(ctx, cs, "bench-watch-", func(ns string) error {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		var mu sync.Mutex
		written := map[string]time.Time{}
		var lat latencies
		var missing int
		var wg sync.WaitGroup
		chans := make([]watch.Interface, 0, watchers)
		for i := 0; i < watchers; i++ {
			w, err := cs.CoreV1().ConfigMaps(ns).Watch(wctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return fmt.Errorf("watch %d: %w", i, err)
			}
			chans = append(chans, w)
			if i%100 == 0 {
				o.progress("watch: opened %d/%d watchers", i, watchers)
			}
		}
		start := time.Now()
		for _, w := range chans {
			wg.Add(1)
			go func(w watch.Interface) {
				defer wg.Done()
				defer w.Stop()
				seen := 0
				timeout := time.After(2 * time.Minute)
				for seen < events {
					select {
					case ev, ok := <-w.ResultChan():
						if !ok {
							mu.Lock()
							missing += events - seen
							mu.Unlock()
							return
						}
						cm, isCM := ev.Object.(*corev1.ConfigMap)
						if ev.Type != watch.Added || !isCM {
							continue
						}
						now := time.Now()
						mu.Lock()
						if t, ok := written[cm.Name]; ok {
							lat = append(lat, max(0, now.Sub(t))) // may arrive before the write's response
						}
						mu.Unlock()
						seen++
					case <-timeout:
						mu.Lock()
						missing += events - seen
						mu.Unlock()
						return
					}
				}
			}(w)
		}
		for i := 0; i < events; i++ {
			name := fmt.Sprintf("w-%04d", i)
			mu.Lock() // hold the record until the write's time is known
			_, err := cs.CoreV1().ConfigMaps(ns).Create(wctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			written[name] = time.Now()
			mu.Unlock()
			if err != nil {
				cancel()
				return fmt.Errorf("write %d: %w", i, err)
			}
			o.progress("watch: wrote %d/%d events", i+1, events)
		}
		wg.Wait()
		elapsed := time.Since(start)
		r.add("watchers", float64(watchers), "count")
		r.add("events", float64(events), "count")
		lat.addTo(r, "delivery")
		r.add("deliveries_per_sec", float64(len(lat))/elapsed.Seconds(), "events/s")
		r.add("missed_deliveries", float64(missing), "count")
		return nil
	})
}
