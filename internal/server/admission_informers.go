package server

import (
	"context"
	"log/slog"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/allocator"
	"plainkube.dev/plainkube/internal/admission/podsecurity"
)

// startAdmission gives the admission plugins that read the API their
// informers and the client they write with. It closes done once every
// informer has synced: the server is not ready before.
func startAdmission(ctx context.Context, cfg *rest.Config, log *slog.Logger, done chan<- struct{}, p admissionDeps, exemptions podsecurity.Exemptions) error {
	return startInformers(ctx, cfg, log, "admission", func(f informers.SharedInformerFactory, cs kubernetes.Interface) (func() bool, error) {
		p.limitRanger.Start(f, cs)
		p.resourceQuota.Start(f, cs)
		p.services.Start(f, cs)
		if err := p.podSecurity.Start(f, cs, exemptions); err != nil {
			return nil, err
		}
		return admission.Synced{p.limitRanger.HasSynced, p.resourceQuota.HasSynced, p.podSecurity.HasSynced, p.services.HasSynced}.HasSynced, nil
	}, func(ctx context.Context) {
		go p.services.RunRepair(ctx, log, allocator.RepairInterval)
		close(done)
	})
}
