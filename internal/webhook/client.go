package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ClientConfig says where a webhook is: URL, or else Service; CABundle
// (PEM) signs its serving certificate (empty: the system roots).
type ClientConfig struct {
	URL      string
	Service  *Service
	CABundle []byte
}

// Service names a webhook served behind a Service: its namespace, name,
// port (0: 443) and the path of the request.
type Service struct {
	Namespace, Name, Path string
	Port                  int32
}

// ServiceResolver finds the address (host:port) at which a Service's port
// is served.
type ServiceResolver interface {
	ResolveEndpoint(namespace, name string, port int32) (string, error)
}

// maxResponseBytes bounds what a webhook may answer.
const maxResponseBytes = 32 << 20

// Clients calls webhooks, keeping one HTTP client (and its idle
// connections) per CA bundle and target.
type Clients struct {
	resolver ServiceResolver
	mu       sync.Mutex
	clients  map[string]*http.Client
}

// NewClients calls webhooks, resolving Services with r (nil: webhooks
// named by Service fail).
func NewClients(r ServiceResolver) *Clients {
	return &Clients{resolver: r, clients: map[string]*http.Client{}}
}

// Post sends body (JSON) to the webhook and returns its answer. timeout
// (> 0) bounds the call and is passed on as ?timeout=, as upstream does. A
// response other than 2xx is an *apierrors.StatusError: the Status the
// webhook sent, or upstream's generic one for its code.
func (c *Clients) Post(ctx context.Context, cc ClientConfig, timeout time.Duration, body []byte) ([]byte, error) {
	target, err := targetURL(cc)
	if err != nil {
		return nil, err
	}
	client, err := c.client(cc, target)
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
		// As upstream's REST client: whole seconds, rounded up.
		if t := timeout.Truncate(time.Second); t != timeout {
			timeout = t + time.Second
		}
		target.RawQuery = "timeout=" + timeout.String()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, */*")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("Post %q: reading the response: %w", target.String(), err)
	}
	if len(data) > maxResponseBytes {
		return nil, fmt.Errorf("Post %q: the response is larger than %d bytes", target.String(), maxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, responseError(resp.StatusCode, data)
	}
	return data, nil
}

// responseError is the error of a non-2xx answer, as client-go's REST
// client makes it: the Status in the body if there is one.
func responseError(code int, body []byte) error {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Status == metav1.StatusFailure {
		if st.Code == 0 {
			st.Code = int32(code)
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	return apierrors.NewGenericServerResponse(code, http.MethodPost, schema.GroupResource{}, "", strings.TrimSpace(string(body)), 0, true)
}

// targetURL is where a request goes: the URL, or
// https://<name>.<namespace>.svc:<port><path> (dialled at an endpoint).
func targetURL(cc ClientConfig) (*url.URL, error) {
	if s := cc.Service; s != nil {
		port := s.Port
		if port == 0 {
			port = 443
		}
		path := s.Path
		if path == "" {
			path = "/"
		}
		return &url.URL{Scheme: "https", Host: net.JoinHostPort(serverName(s), strconv.Itoa(int(port))), Path: path}, nil
	}
	if cc.URL == "" {
		return nil, errors.New("webhook configuration must have either service or URL")
	}
	u, err := url.Parse(cc.URL)
	if err != nil {
		return nil, fmt.Errorf("Unparsable URL: %v", err)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return u, nil
}

func serverName(s *Service) string { return s.Name + "." + s.Namespace + ".svc" }

// client is the cached HTTP client of cc's CA bundle and target.
func (c *Clients) client(cc ClientConfig, target *url.URL) (*http.Client, error) {
	sum := sha256.Sum256(cc.CABundle)
	key := hex.EncodeToString(sum[:]) + "|" + target.Host
	if cc.Service != nil {
		key += "|service"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if hc, ok := c.clients[key]; ok {
		return hc, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(cc.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cc.CABundle) {
			return nil, errors.New("unable to load root certificates: unable to parse bytes as PEM block")
		}
		tlsConfig.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               nil,
		TLSClientConfig:     tlsConfig,
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	if s := cc.Service; s != nil {
		tlsConfig.ServerName = serverName(s)
		// As upstream: HTTP/1.1 to a Service, so that concurrent calls
		// spread over its endpoints instead of one HTTP/2 connection.
		tr.ForceAttemptHTTP2 = false
		svc, host := *s, target.Host
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == host {
				if c.resolver == nil {
					return nil, fmt.Errorf("no resolver of services for %s", host)
				}
				port := svc.Port
				if port == 0 {
					port = 443
				}
				ep, err := c.resolver.ResolveEndpoint(svc.Namespace, svc.Name, port)
				if err != nil {
					return nil, err
				}
				addr = ep
			}
			return dialer.DialContext(ctx, network, addr)
		}
	}
	hc := &http.Client{Transport: tr}
	c.clients[key] = hc
	return hc, nil
}

// CloseIdle closes every client's idle connections.
func (c *Clients) CloseIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, hc := range c.clients {
		hc.CloseIdleConnections()
	}
}
