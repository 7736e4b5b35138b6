package reconcile

import (
	"context"
	"testing"
	"time"
)

// reporter is a controller that reports synced when told to, twice (as a
// restarted controller would), then runs until its context ends.
type reporter struct {
	name string
	sync chan struct{}
}

func (r reporter) Name() string { return r.name }

func (r reporter) Run(ctx context.Context, _ int) error {
	select {
	case <-r.sync:
	case <-ctx.Done():
		return nil
	}
	ReportSynced(ctx)
	ReportSynced(ctx)
	<-ctx.Done()
	return nil
}

// TestWhenAllSynced: done is called once, after the last controller
// reports, not before; without WhenAllSynced a report is a no-op.
func TestWhenAllSynced(t *testing.T) {
	a, b := reporter{"a", make(chan struct{})}, reporter{"b", make(chan struct{})}
	calls := make(chan struct{}, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go RunAll(WhenAllSynced(ctx, func() { calls <- struct{}{} }), a, b)
	close(a.sync)
	select {
	case <-calls:
		t.Fatal("all synced with one controller of two reporting")
	case <-time.After(100 * time.Millisecond):
	}
	close(b.sync)
	select {
	case <-calls:
	case <-time.After(5 * time.Second):
		t.Fatal("not all synced after both reported")
	}
	select {
	case <-calls:
		t.Fatal("done called twice")
	case <-time.After(50 * time.Millisecond):
	}
	ReportSynced(context.Background()) // no-op
}
