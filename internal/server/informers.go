package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/reconcile"
)

// syncTimeout is how long the server waits for one set of its informers
// before it says so in its log. It goes on waiting: what gates readiness
// keeps the server not ready until they have synced.
const syncTimeout = time.Minute

// startInformers starts one set of the API server's readers of its own
// API (RBAC, the Node authorizer's graph, the admission plugins, webhooks
// and policies): a factory of informers over cfg, the loopback client, in
// which register asks for the informers it reads (it may keep the client,
// for its writes and look-ups) and returns what reports that they have
// synced. The
// informers run until ctx ends; once synced reports true, ready (if set)
// runs in the background. Errors and the log line of a slow sync name the
// set as what.
func startInformers(ctx context.Context, cfg *rest.Config, log *slog.Logger, what string,
	register func(f informers.SharedInformerFactory, cs kubernetes.Interface) (synced func() bool, err error),
	ready func(context.Context)) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	synced, err := register(f, cs)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	f.Start(ctx.Done())
	go func() {
		defer f.Shutdown()
		if waitSynced(ctx, log, what+" informers", synced) && ready != nil {
			ready(ctx)
		}
		<-ctx.Done()
	}()
	return nil
}

// waitSynced waits until synced reports true (true) or ctx ends (false),
// looking as reconcile.WaitForCacheSync does (a start waits on it). If that
// takes longer than syncTimeout it logs so once, naming what it waits
// for, and goes on waiting.
func waitSynced(ctx context.Context, log *slog.Logger, what string, synced func() bool) bool {
	warn := time.AfterFunc(syncTimeout, func() {
		log.Warn(what+" have not synced; the server is not ready until they have", "after", syncTimeout)
	})
	defer warn.Stop()
	return reconcile.WaitForCacheSync(ctx, synced)
}
