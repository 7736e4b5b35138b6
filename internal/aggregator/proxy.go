package aggregator

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/transport"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"plainkube.dev/plainkube/internal/auth"
)

// proxy forwards the requests of one remote APIService (as its spec was
// when the proxy was made) to a ready endpoint of its Service.
type proxy struct {
	c                     *Controller
	namespace, name       string
	port                  int32
	transport             *http.Transport
	transportErr          error
	serverName, groupPath string
}

func newProxy(c *Controller, a *apiregistrationv1.APIService) *proxy {
	s := a.Spec.Service
	p := &proxy{c: c, namespace: s.Namespace, name: s.Name, port: 443, serverName: s.Name + "." + s.Namespace + ".svc",
		groupPath: "/apis/" + a.Spec.Group + "/" + a.Spec.Version}
	if s.Port != nil {
		p.port = *s.Port
	}
	tlsConfig := &tls.Config{ServerName: p.serverName, MinVersion: tls.VersionTLS12}
	if c.opts.ProxyClientCert.Certificate != nil {
		tlsConfig.Certificates = []tls.Certificate{c.opts.ProxyClientCert}
	}
	switch {
	case a.Spec.InsecureSkipTLSVerify:
		tlsConfig.InsecureSkipVerify = true
	case len(a.Spec.CABundle) > 0:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(a.Spec.CABundle) {
			p.transportErr = errors.New("unable to load root certificates: unable to parse bytes as PEM block")
		}
		tlsConfig.RootCAs = pool
	}
	// HTTP/1.1 only, so that upgrades (exec, port-forward) pass through.
	p.transport = &http.Transport{DialContext: c.opts.DialContext, TLSClientConfig: tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second, MaxIdleConnsPerHost: 25, IdleConnTimeout: 90 * time.Second}
	return p
}

// ServeHTTP proxies one authenticated, authorized request, naming its
// user in the request headers the aggregated server trusts from the
// front-proxy client certificate.
func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.transportErr != nil {
		writeStatus(w, apierrors.NewInternalError(p.transportErr))
		return
	}
	user := auth.UserFrom(r.Context())
	if user == nil {
		writeStatus(w, apierrors.NewInternalError(errors.New("missing user")))
		return
	}
	addr, err := p.c.resolve(p.namespace, p.name, p.port)
	if err != nil {
		p.c.log.Info("cannot reach aggregated API server", "service", p.namespace+"/"+p.name, "err", err)
		writeStatus(w, apierrors.NewServiceUnavailable("service unavailable"))
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = "https", addr, addr
			transport.SetAuthProxyHeaders(pr.Out, user.Name, user.UID, user.Groups, user.Extra)
		},
		Transport:     p.transport,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.c.log.Info("aggregated API server did not answer", "service", p.namespace+"/"+p.name, "err", err)
			writeStatus(w, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err)))
		},
	}
	rp.ServeHTTP(w, r)
}

// resolve picks a ready endpoint (host:port) of the Service's port, as
// upstream's endpoint routing does; an ExternalName Service is reached at
// its name.
func (c *Controller) resolve(namespace, name string, port int32) (string, error) {
	svc, err := c.services.Services(namespace).Get(name)
	if err != nil {
		return "", err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port))), nil
	}
	portName, ok := servicePortName(svc, port)
	if !ok {
		return "", fmt.Errorf("no service port %d found for service %q", port, svc.Name)
	}
	var addrs []string
	for _, s := range c.endpointSlices(namespace, name) {
		target := int32(0)
		for _, sp := range s.Ports {
			if sp.Port != nil && (sp.Name == nil && portName == "" || sp.Name != nil && *sp.Name == portName) {
				target = *sp.Port
			}
		}
		if target == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready || len(e.Addresses) == 0 {
				continue
			}
			addrs = append(addrs, net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(target))))
		}
	}
	if len(addrs) == 0 {
		return "", fmt.Errorf("no endpoints available for service %q", name)
	}
	return addrs[rand.IntN(len(addrs))], nil
}

// servicePortName is the name of svc's port number port.
func servicePortName(svc *corev1.Service, port int32) (string, bool) {
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			return p.Name, true
		}
	}
	return "", false
}

func (c *Controller) endpointSlices(namespace, name string) []*discoveryv1.EndpointSlice {
	objs, err := c.slices.ByIndex(serviceIndex, namespace+"/"+name)
	if err != nil {
		return nil
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*discoveryv1.EndpointSlice))
	}
	return out
}

// writeStatus answers err as a Status object.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	body, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	w.Write(body)
}
