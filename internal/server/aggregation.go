package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/aggregator"
	"plainkube.dev/plainkube/internal/apiserver"
	"plainkube.dev/plainkube/internal/pki"
	"plainkube.dev/plainkube/internal/registry"
)

// startAggregator runs API aggregation (package aggregator) in-process as
// a client of the server: local APIServices for every built-in
// group-version, remote ones proxied with the front-proxy client
// certificate.
// It closes registered once the local APIServices are registered (a
// readiness gate, as upstream's autoregister-completion check).
func startAggregator(ctx context.Context, cfg *rest.Config, api *apiserver.Server, bundle *pki.Bundle, resources []registry.Resource,
	dial func(ctx context.Context, network, addr string) (net.Conn, error), log *slog.Logger, registered chan<- struct{}) error {
	cert, err := tls.X509KeyPair(bundle.FrontProxyClientCertPEM, bundle.FrontProxyClientKeyPEM)
	if err != nil {
		return err
	}
	var local []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range resources {
		if gv := r.Kind.GroupVersion(); !seen[gv] {
			seen[gv] = true
			local = append(local, gv)
		}
	}
	return aggregator.Start(ctx, cfg, api, aggregator.Options{ProxyClientCert: cert, Local: local, DialContext: dial, Logger: log,
		Registered: sync.OnceFunc(func() { close(registered) })})
}

// extensionAuthentication names the ConfigMap that tells extension API
// servers how to authenticate requests: client certificates of the cluster
// CA, and the front proxy's request headers (upstream's
// kube-system/extension-apiserver-authentication, with its keys).
const extensionAuthentication = "extension-apiserver-authentication"

// ensureExtensionAuthentication writes that ConfigMap.
func ensureExtensionAuthentication(ctx context.Context, cfg *rest.Config, bundle *pki.Bundle) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	list := func(values ...string) string {
		b, _ := json.Marshal(values)
		return string(b)
	}
	data := map[string]string{
		"client-ca-file":                     string(bundle.CAPEM),
		"requestheader-client-ca-file":       string(bundle.FrontProxyCAPEM),
		"requestheader-allowed-names":        list(pki.FrontProxyClientName),
		"requestheader-username-headers":     list("X-Remote-User"),
		"requestheader-uid-headers":          list("X-Remote-Uid"),
		"requestheader-group-headers":        list("X-Remote-Group"),
		"requestheader-extra-headers-prefix": list("X-Remote-Extra-"),
	}
	return createOrUpdate(ctx, func() error {
		_, err := cs.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: extensionAuthentication, Namespace: "kube-system"}, Data: data}, metav1.CreateOptions{})
		return err
	}, func() error {
		cur, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, extensionAuthentication, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Data = data
		_, err = cs.CoreV1().ConfigMaps("kube-system").Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}
