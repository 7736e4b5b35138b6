package server

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/admission/podsecurity"
)

// startAdmission gives the admission plugins that read the API their
// informers — one factory over cfg, the loopback client — and the client
// they write with. It closes done once every informer has synced: the
// server is not ready before.
func startAdmission(ctx context.Context, cfg *rest.Config, done chan<- struct{}, p admissionDeps, exemptions podsecurity.Exemptions) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	p.limitRanger.Start(f, cs)
	p.resourceQuota.Start(f, cs)
	if err := p.podSecurity.Start(f, cs, exemptions); err != nil {
		return err
	}
	f.Start(ctx.Done())
	go func() {
		defer f.Shutdown()
		if waitFor(ctx, func() bool {
			return p.limitRanger.HasSynced() && p.resourceQuota.HasSynced() && p.podSecurity.HasSynced()
		}) {
			close(done)
		}
		<-ctx.Done()
	}()
	return nil
}
