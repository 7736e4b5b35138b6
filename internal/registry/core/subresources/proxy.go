package subresources

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"

	"plainkube.dev/plainkube/internal/api/nodeutil"
	"plainkube.dev/plainkube/internal/registry"
)

// podProxyTransport reaches pods and services: plain HTTP, or HTTPS
// without verifying the backend's certificate, as upstream's proxy
// transport does.
var podProxyTransport http.RoundTripper = &http.Transport{
	Proxy:               nil,
	DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
	TLSHandshakeTimeout: 10 * time.Second,
	MaxIdleConnsPerHost: 10,
	IdleConnTimeout:     90 * time.Second,
}

// Proxy serves nodes/{name}/proxy, pods/{name}/proxy and
// services/{name}/proxy with the rest of the path: the name may be
// "name", "name:port" or "scheme:name:port" (scheme http or https).
//
//   - nodes: to the node agent's HTTPS API (with the API server's client
//     certificate) when no port or the agent's port is named, else to
//     http(s)://node address:port;
//   - pods: to podIP:port (default: the first declared container port);
//   - services: to a ready endpoint of the service port from its
//     EndpointSlices (503 when there is none).
var Proxy = registry.Handler{Serve: serveProxy, OwnForm: true}

func serveProxy(rq *registry.Request) error {
	ctx := rq.R.Context()
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(rq.Name)
	if !ok {
		return badRequest("invalid %s request %q", rq.Resource.Resource, rq.Name)
	}
	path := proxyPath(rq.R.URL.Path, rq.Name)
	if err := rq.API.AdmitConnect(proxyOptions(rq.Resource.Resource, path)); err != nil {
		return err
	}
	obj, err := rq.API.Get(ctx, rq.Resource, rq.Namespace, name)
	if err != nil {
		return err
	}
	var loc *url.URL
	transport := podProxyTransport
	switch o := obj.(type) {
	case *corev1.Node:
		loc, transport, err = nodeProxyLocation(rq.API, o, scheme, port)
	case *corev1.Pod:
		loc, err = podProxyLocation(ctx, rq.API, o, scheme, port)
	case *corev1.Service:
		loc, err = serviceProxyLocation(ctx, rq.API, o, scheme, port)
	default:
		return methodNotAllowed(rq)
	}
	if err != nil {
		return err
	}
	loc.Path = joinPreservingSlash(loc.Path, path)
	h := proxy.NewUpgradeAwareHandler(loc, transport, true, false, statusResponder{rq.API})
	h.ServeHTTP(rq.W, rq.R)
	return nil
}

// proxyPath is what follows "{name}/proxy" in a request path, with its
// trailing slash ("" when nothing follows).
func proxyPath(path, name string) string {
	marker := "/" + name + "/proxy"
	i := strings.Index(path, marker+"/")
	if i < 0 {
		return ""
	}
	return path[i+len(marker):]
}

func joinPreservingSlash(base, p string) string {
	if p == "" {
		return base
	}
	return strings.TrimSuffix(base, "/") + p
}

func nodeProxyLocation(api registry.API, node *corev1.Node, scheme, port string) (*url.URL, http.RoundTripper, error) {
	if nodeutil.IsSimulated(node) {
		return nil, nil, badRequest("node %q is simulated: it runs no agent API to proxy to", node.Name)
	}
	agentPort := strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port))
	if port == "" || port == agentPort {
		addr := nodeutil.AgentAddress(node)
		if api.KubeletClient() == nil || addr == "" {
			return nil, nil, notImplemented(fmt.Sprintf("node %q does not serve a proxy (its agent has no API endpoint)", node.Name))
		}
		return &url.URL{Scheme: "https", Host: addr}, kubeletTransport(api.KubeletClient()), nil
	}
	host := nodeutil.Host(node)
	if host == "" {
		return nil, nil, badRequest("node %q has no address", node.Name)
	}
	if scheme == "" {
		scheme = "http"
	}
	return &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}, podProxyTransport, nil
}

func podProxyLocation(ctx context.Context, api registry.API, pod *corev1.Pod, scheme, port string) (*url.URL, error) {
	if pod.Spec.NodeName == "" {
		return nil, badRequest("pod %s does not have a host assigned", pod.Name)
	}
	node, err := node(ctx, api, pod.Spec.NodeName)
	if err != nil {
		return nil, err
	}
	if nodeutil.IsSimulated(node) {
		return nil, badRequest("pod %q runs on simulated node %q: simulated pods run no containers to proxy to", pod.Name, node.Name)
	}
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	ip := net.ParseIP(pod.Status.PodIP)
	if ip == nil || !ip.IsGlobalUnicast() {
		return nil, badRequest("address not allowed")
	}
	if scheme == "" {
		scheme = "http"
	}
	host := pod.Status.PodIP
	if port != "" {
		host = net.JoinHostPort(host, port)
	}
	return &url.URL{Scheme: scheme, Host: host}, nil
}

func serviceProxyLocation(ctx context.Context, api registry.API, svc *corev1.Service, scheme, port string) (*url.URL, error) {
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if port == "" || p.Name == port || strconv.Itoa(int(p.Port)) == port {
			sp = p
			break
		}
	}
	if sp == nil {
		return nil, registry.NewStatusError(http.StatusServiceUnavailable, "ServiceUnavailable", fmt.Sprintf("no service port %q found for service %q", port, svc.Name))
	}
	slices, err := endpointSlices(ctx, api, svc.Namespace, svc.Name)
	if err != nil {
		return nil, err
	}
	var addrs []string
	simulated := 0
	for _, es := range slices {
		var epPort int32
		for _, p := range es.Ports {
			if p.Port != nil && (p.Name == nil && sp.Name == "" || p.Name != nil && *p.Name == sp.Name) {
				epPort = *p.Port
			}
		}
		if epPort == 0 {
			continue
		}
		for _, ep := range es.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
				continue
			}
			if ep.NodeName != nil {
				if n, err := node(ctx, api, *ep.NodeName); err == nil && nodeutil.IsSimulated(n) {
					simulated++
					continue
				}
			}
			addrs = append(addrs, net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(epPort))))
		}
	}
	if len(addrs) == 0 && simulated > 0 {
		return nil, badRequest("service %q has only endpoints on simulated nodes, which run no containers to proxy to", svc.Name)
	}
	if len(addrs) == 0 {
		return nil, registry.NewStatusError(http.StatusServiceUnavailable, "ServiceUnavailable", fmt.Sprintf("no endpoints available for service %q", svc.Name))
	}
	if scheme == "" {
		scheme = "http"
	}
	return &url.URL{Scheme: scheme, Host: addrs[rand.IntN(len(addrs))]}, nil
}

// endpointSlices lists the EndpointSlices of a service from the cache.
func endpointSlices(ctx context.Context, api registry.API, ns, service string) ([]*discoveryv1.EndpointSlice, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service})
	objs, err := api.List(ctx, discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), ns, registry.ListOptions{Labels: sel, ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		return nil, notImplemented("EndpointSlices are not served, so services cannot be proxied to")
	}
	if err != nil {
		return nil, err
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if es, ok := o.(*discoveryv1.EndpointSlice); ok {
			out = append(out, es)
		}
	}
	return out, nil
}

// proxyOptions are a proxy request's options as admission sees them:
// NodeProxyOptions, PodProxyOptions or ServiceProxyOptions.
func proxyOptions(resource, path string) runtime.Object {
	switch resource {
	case "nodes":
		return &corev1.NodeProxyOptions{Path: path}
	case "services":
		return &corev1.ServiceProxyOptions{Path: path}
	}
	return &corev1.PodProxyOptions{Path: path}
}
