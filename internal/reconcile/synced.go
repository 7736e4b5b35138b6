package reconcile

import (
	"context"
	"sync"
	"sync/atomic"
)

// A controller run by RunAll reports, once its informers have synced, to
// whoever asked with WhenAllSynced: so testenv's Start can return when
// every controller it runs acts on what is already in the API.

type (
	syncedKey    struct{}
	allSyncedKey struct{}
)

// ReportSynced tells RunAll's caller that the controller running with ctx
// has synced its informers; a no-op unless the caller asked
// (WhenAllSynced). A restarted controller's second report is not counted.
func ReportSynced(ctx context.Context) {
	if report, ok := ctx.Value(syncedKey{}).(func()); ok {
		report()
	}
}

// WhenAllSynced returns ctx for RunAll: done is called once every
// controller RunAll runs with it has reported (at once if there are none).
func WhenAllSynced(ctx context.Context, done func()) context.Context {
	return context.WithValue(ctx, allSyncedKey{}, done)
}

// withSyncReports gives each of n controllers its context carrying its
// report, counted towards the done of WhenAllSynced, if ctx has one.
func withSyncReports(ctx context.Context, n int) []context.Context {
	out := make([]context.Context, n)
	done, ok := ctx.Value(allSyncedKey{}).(func())
	if !ok {
		for i := range out {
			out[i] = ctx
		}
		return out
	}
	if n == 0 {
		done()
	}
	var pending atomic.Int32
	pending.Store(int32(n))
	for i := range out {
		out[i] = context.WithValue(ctx, syncedKey{}, sync.OnceFunc(func() {
			if pending.Add(-1) == 0 {
				done()
			}
		}))
	}
	return out
}
