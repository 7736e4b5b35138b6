package reconcile

import (
	"context"
	"log/slog"
	"time"
)

// Kick asks a SyncLoop for one more sync: any number of Pokes between two
// syncs make one (the loop is level-based; the sync reads current state).
type Kick chan struct{}

// NewKick makes a Kick.
func NewKick() Kick { return make(Kick, 1) }

// Poke asks for a sync without waiting.
func (k Kick) Poke() {
	select {
	case k <- struct{}{}:
	default:
	}
}

// SyncLoop is the loop of a component that programs a whole state at once
// (the service proxy's, the pod network's and the NetworkPolicy rules of a
// node) rather than key by key: Sync runs once at start, again after
// every Poke of its Kick and every Period, and after a failure with
// exponential backoff from MinBackoff to 10 s.
type SyncLoop struct {
	// Name names the loop in logs and metrics (Panics).
	Name string
	// Log receives a recovered panic; nil means slog.Default().
	Log  *slog.Logger
	Sync func(context.Context) error
	// Failed is told each failed sync (to log it; to make the next sync
	// write everything).
	Failed func(error)
	// OnResync, if set, runs when Period has passed, before that sync.
	OnResync   func()
	Period     time.Duration
	MinBackoff time.Duration
}

// Run runs the loop until ctx ends.
func (l SyncLoop) Run(ctx context.Context, kick Kick) {
	resync := time.NewTicker(l.Period)
	defer resync.Stop()
	backoff := time.Duration(0)
	for {
		if err := l.syncOnce(ctx); err != nil {
			l.Failed(err)
			backoff = min(max(2*backoff, l.MinBackoff), 10*time.Second)
		} else {
			backoff = 0
		}
		var retry <-chan time.Time
		if backoff > 0 {
			retry = time.After(backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-retry:
		case <-resync.C:
			if l.OnResync != nil {
				l.OnResync()
			}
		}
	}
}

// syncOnce runs Sync; a panic becomes its error.
func (l SyncLoop) syncOnce(ctx context.Context) (err error) {
	log := l.Log
	if log == nil {
		log = slog.Default()
	}
	defer Recover(l.Name, log, &err)
	return l.Sync(ctx)
}
