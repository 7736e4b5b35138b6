package reconcile

import (
	"context"
	"log/slog"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderElection makes a component run only while it holds a
// coordination.k8s.io Lease, so that several copies can run for
// availability and one works at a time.
type LeaderElection struct {
	// Identity of this candidate in the Lease; default hostname plus a
	// random suffix. A candidate that keeps its identity across restarts
	// takes its Lease back at once rather than after it expires.
	Identity string
	// Namespace and Name of the Lease; Namespace defaults to kube-system.
	Namespace string
	Name      string
	// LeaseDuration (15 s), RenewDeadline (10 s) and RetryPeriod (2 s), as
	// upstream's defaults.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// withDefaults fills what is unset; name is the default Lease name.
func (le LeaderElection) withDefaults(name string) LeaderElection {
	if le.Identity == "" {
		host, _ := os.Hostname()
		le.Identity = host + "_" + string(uuid.NewUUID())
	}
	if le.Namespace == "" {
		le.Namespace = "kube-system"
	}
	if le.Name == "" {
		le.Name = name
	}
	if le.LeaseDuration == 0 {
		le.LeaseDuration = 15 * time.Second
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = 10 * time.Second
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = 2 * time.Second
	}
	return le
}

// RunLeading runs lead for each term this candidate holds the Lease
// (defaultName when le.Name is unset), until ctx ends. When a term ends
// — the Lease was lost (not renewed in time, or taken by another) — lead's
// context is cancelled, RunLeading waits for lead to return, and
// campaigns again: a component that lost its Lease steps down and comes
// back, rather than leaving a dead process behind a green health check.
// When ctx ends the Lease is released, so that another candidate (or the
// next start) leads at once.
func RunLeading(ctx context.Context, client kubernetes.Interface, le LeaderElection, defaultName string, log *slog.Logger, lead func(ctx context.Context)) {
	le = le.withDefaults(defaultName)
	log = log.With("lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
	}
	for ctx.Err() == nil {
		// The elector hands each term's context over; lead runs on this
		// goroutine, so that a term is over only once lead has returned.
		terms := make(chan context.Context, 1)
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
			ReleaseOnCancel: true, Name: le.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(term context.Context) { terms <- term },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil { // only a bad configuration: durations out of order
			log.Error("leader election", "err", err)
			return
		}
		electorDone := make(chan struct{})
		go func() {
			defer close(electorDone)
			elector.Run(ctx)
		}()
		select {
		case term := <-terms:
			log.Info("leading")
			lead(term)
			<-electorDone
		case <-electorDone: // ctx ended before this candidate led
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("lost the Lease: stepped down; campaigning again")
	}
}
