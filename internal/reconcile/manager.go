package reconcile

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Controller is one control loop.
type Controller interface {
	// Name identifies the controller in logs, e.g. "garbagecollector".
	Name() string
	// Run starts the controller with the given number of workers and
	// blocks until ctx ends. An error means it could not run (or stopped
	// running) before ctx ended.
	Run(ctx context.Context, workers int) error
}

// DefaultWorkers is how many workers RunAll gives a controller that does
// not say otherwise (see WithWorkers).
const DefaultWorkers = 2

// Restart backoff for a controller whose Run returns before ctx ends
// (variables for tests).
var (
	restartBaseDelay = time.Second
	restartMaxDelay  = 30 * time.Second
)

type withWorkers struct {
	Controller
	workers int
}

func (w withWorkers) Workers() int { return w.workers }

// WithWorkers makes RunAll run c with n workers instead of DefaultWorkers.
func WithWorkers(c Controller, n int) Controller { return withWorkers{c, n} }

// RunAll runs each controller in its own goroutine until ctx ends, and
// returns when all of them have returned. A controller whose Run returns
// before ctx ends (with an error or not) is logged and started again after a
// backoff that doubles up to 30 s. Logs go to slog.Default(). A ctx from
// WhenAllSynced hears when every controller has synced (ReportSynced).
func RunAll(ctx context.Context, controllers ...Controller) {
	var wg sync.WaitGroup
	ctxs := withSyncReports(ctx, len(controllers))
	for i, c := range controllers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runOne(ctxs[i], c, slog.Default().With("controller", c.Name()))
		}()
	}
	wg.Wait()
}

func runOne(ctx context.Context, c Controller, log *slog.Logger) {
	workers := DefaultWorkers
	if w, ok := c.(interface{ Workers() int }); ok && w.Workers() > 0 {
		workers = w.Workers()
	}
	delay := restartBaseDelay
	for {
		log.Info("starting controller", "workers", workers)
		started := time.Now()
		err := c.Run(ctx, workers)
		if ctx.Err() != nil {
			log.Info("controller stopped")
			return
		}
		if time.Since(started) > 2*restartMaxDelay {
			delay = restartBaseDelay // it ran for a while: start the backoff over
		}
		log.Error("controller returned early; restarting", "err", err, "after", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			log.Info("controller stopped")
			return
		case <-t.C:
		}
		delay = min(2*delay, restartMaxDelay)
	}
}
