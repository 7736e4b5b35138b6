package apiextensions

import (
	"context"
	"fmt"
	"net"
	"strconv"

	aeclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	aeinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/apiextensions/customresource"
	"plainkube.dev/plainkube/internal/apiextensions/establish"
	"plainkube.dev/plainkube/internal/apiextensions/finalizer"
	"plainkube.dev/plainkube/internal/apiextensions/naming"
	"plainkube.dev/plainkube/internal/apiextensions/serving"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Start runs the CRD controllers against cfg until ctx ends, installing
// custom resources into api. The returned channel is closed once the CRDs
// stored when it started are served (the API server's readiness gate).
func Start(ctx context.Context, cfg *rest.Config, api serving.Installer) (<-chan struct{}, error) {
	cs, err := aeclientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	factory := aeinformers.NewSharedInformerFactory(cs, 0)
	crds := factory.Apiextensions().V1().CustomResourceDefinitions()
	est := establish.New(cs.ApiextensionsV1(), crds)
	srv := serving.New(crds, api, customresource.Options{ResolveService: serviceResolver(kube)}, est.Queue)
	nam := naming.New(cs.ApiextensionsV1(), crds)
	fin := finalizer.New(cs.ApiextensionsV1(), dyn, crds)
	factory.Start(ctx.Done())
	go reconcile.RunAll(ctx, reconcile.WithWorkers(srv, 1), reconcile.WithWorkers(nam, 1), est, fin)
	return srv.Synced(), nil
}

// serviceResolver finds a webhook service's cluster IP, as upstream's
// default service resolver does.
func serviceResolver(kube kubernetes.Interface) func(ctx context.Context, namespace, name string, port int32) (string, error) {
	return func(ctx context.Context, namespace, name string, port int32) (string, error) {
		svc, err := kube.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		switch {
		case svc.Spec.Type == "ExternalName":
			return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port))), nil
		case svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == "None":
			return "", fmt.Errorf("service %s/%s has no cluster IP", namespace, name)
		}
		for _, p := range svc.Spec.Ports {
			if p.Port == port {
				return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(port))), nil
			}
		}
		return "", fmt.Errorf("service %s/%s has no port %d", namespace, name, port)
	}
}
