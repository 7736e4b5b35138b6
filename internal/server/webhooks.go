package server

import (
	"context"
	"log/slog"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	admwebhook "plainkube.dev/plainkube/internal/admission/webhook"
	"plainkube.dev/plainkube/internal/apiserver"
	"plainkube.dev/plainkube/internal/webhook"
)

// startWebhooks gives the admission webhook plugins their configurations
// and the namespaces' labels, and returns the webhook client they share
// with CRD conversion, which reaches a webhook Service at one of its ready
// endpoints (from the Services' EndpointSlices).
func startWebhooks(ctx context.Context, cfg *rest.Config, log *slog.Logger, hooks *admwebhook.Webhooks, api *apiserver.Server) (*webhook.Clients, error) {
	var clients *webhook.Clients
	err := startInformers(ctx, cfg, log, "admission webhooks", func(f informers.SharedInformerFactory, cs kubernetes.Interface) (func() bool, error) {
		src, err := admwebhook.NewSource(f, cs)
		if err != nil {
			return nil, err
		}
		clients = webhook.NewClients(webhook.NewEndpointResolver(f))
		hooks.Start(src, clients, versions{api})
		return src.HasSynced, nil
	}, nil)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, clients.CloseIdle)
	return clients, nil
}

// versions shows the API server's equivalent resources to the webhooks.
type versions struct{ api *apiserver.Server }

func (v versions) Equivalents(gvr schema.GroupVersionResource, sub string) []admwebhook.Equivalent {
	var out []admwebhook.Equivalent
	for _, e := range v.api.EquivalentResources(gvr, sub) {
		out = append(out, admwebhook.Equivalent{Resource: e.Resource, Kind: e.Kind})
	}
	return out
}

func (v versions) Convert(ctx context.Context, obj runtime.Object, kind schema.GroupVersionKind) (runtime.Object, error) {
	return v.api.ConvertObject(ctx, obj, kind)
}

func (v versions) Default(obj runtime.Object) { v.api.DefaultObject(obj) }
