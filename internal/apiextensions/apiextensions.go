package apiextensions

import (
	"context"

	aeclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	aeinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/apiextensions/customresource"
	"plainkube.dev/plainkube/internal/apiextensions/establish"
	"plainkube.dev/plainkube/internal/apiextensions/finalizer"
	"plainkube.dev/plainkube/internal/apiextensions/naming"
	"plainkube.dev/plainkube/internal/apiextensions/serving"
	"plainkube.dev/plainkube/internal/reconcile"
	"plainkube.dev/plainkube/internal/webhook"
)

// Start runs the CRD controllers against cfg until ctx ends, installing
// custom resources into api; conversion webhooks are called through
// webhooks. The returned channel is closed once the CRDs stored when it
// started are served (the API server's readiness gate).
func Start(ctx context.Context, cfg *rest.Config, api serving.Installer, webhooks *webhook.Clients) (<-chan struct{}, error) {
	cs, err := aeclientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	factory := aeinformers.NewSharedInformerFactory(cs, 0)
	crds := factory.Apiextensions().V1().CustomResourceDefinitions()
	est := establish.New(cs.ApiextensionsV1(), crds)
	srv := serving.New(crds, api, customresource.Options{Webhooks: webhooks}, est.Queue)
	nam := naming.New(cs.ApiextensionsV1(), crds)
	fin := finalizer.New(cs.ApiextensionsV1(), dyn, crds)
	factory.Start(ctx.Done())
	go reconcile.RunAll(ctx, reconcile.WithWorkers(srv, 1), reconcile.WithWorkers(nam, 1), est, fin)
	return srv.Synced(), nil
}
