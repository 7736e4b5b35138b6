package podautoscaler

import (
	"context"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"plainkube.dev/plainkube/internal/controller"
)

// NewSyncer starts c's informers without its workers and returns one
// sync of a key, and whether an HPA is settled at replicas (a sync would
// write nothing): for benchmarks of a whole sync. clk is the controller's
// time.
func NewSyncer(ctx context.Context, c *Controller, clk clock.PassiveClock) (sync func(key string) error, settled func(key string, replicas int32) bool, err error) {
	b := controller.NewBuilder(controller.Config{Name: Name, Client: c.Client})
	l, err := c.newLoop(ctx, b, time.Hour, clk)
	if err != nil {
		return nil, nil, err
	}
	l.rec = record.NewFakeRecorder(1000)
	b.Informers().Start(ctx.Done())
	b.SharedInformers().Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), b.Informers().Autoscaling().V2().HorizontalPodAutoscalers().Informer().HasSynced,
		b.SharedInformers().Core().V1().Pods().Informer().HasSynced)
	sync = func(key string) error {
		_, err := l.reconcile(ctx, key)
		return err
	}
	settled = func(key string, replicas int32) bool {
		if sync(key) != nil {
			return false
		}
		st, ok, err := l.observe(key)
		if !ok || err != nil || st.HPA.Status.CurrentReplicas != replicas || len(st.HPA.Status.CurrentMetrics) == 0 {
			return false
		}
		p := PlanSync(st)
		return !p.Rescale && !StatusChanged(st.HPA, &p.Status)
	}
	return sync, settled, nil
}
