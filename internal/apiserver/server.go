package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/apiserver/priority"
	"plainkube.dev/plainkube/internal/audit"
	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/storage"
)

// Config is what the API server is built from.
type Config struct {
	Storage   storage.Interface
	Resources []registry.Resource
	// Authenticator finds the user of a request; requests it does not
	// recognise are anonymous.
	Authenticator auth.Authenticator
	Authorizer    auth.Authorizer
	// ServiceAccounts issues service-account tokens (lent to the
	// serviceaccounts/token handler) and publishes their keys
	// (/.well-known/openid-configuration, /openid/v1/jwks); nil: those
	// answer 501 and 404. New sets its
	// Objects to this server's storage when unset. Put it in Authenticator
	// too for its tokens to authenticate requests.
	ServiceAccounts *auth.ServiceAccountTokens
	// Admission is the admission chain every write passes through.
	Admission admission.Chain
	// AdmissionMetrics times the chain's two steps (nil: not timed).
	AdmissionMetrics *admission.Metrics
	// Metrics is what /metrics serves, in Prometheus' text format; the
	// server adds its request, watch and storage metrics to it (nil:
	// /metrics is not found and nothing is measured).
	Metrics *prometheus.Registry
	// Version is served at /version.
	Version VersionInfo
	// KubeletClient reaches node agents' APIs; it presents the API
	// server's client certificate and trusts only the CA of node agents'
	// serving certificates (the kubelet-serving CA). It is lent to
	// resources' handlers (registry.API: pods/log, exec, nodes/proxy,
	// metrics.k8s.io…). Nil: those answer 501 or leave the node out.
	KubeletClient *http.Client
	// ScaleTable is the table of the scale subresource's autoscaling/v1
	// Scale, which every scalable resource serves (`kubectl get
	// --subresource=scale`; nil: the default table).
	ScaleTable *registry.TableSpec
	// OpenAPI serves /openapi/v2 and /openapi/v3 (nil: 404). If it can
	// also be told the resource set (openapi.Builder can), custom
	// resources are published in it, and their field managers read
	// ObjectMeta's schema from it.
	OpenAPI http.Handler
	// LiveChecks are checked by /livez, /healthz and /readyz (etcd),
	// ReadyChecks by /readyz alone (the Leases of in-process components);
	// ping and informer-sync are the server's own.
	LiveChecks, ReadyChecks []HealthCheck
	// Components are the parts of the control plane whose health
	// /api/v1/componentstatuses reports (lent to its handler).
	Components []registry.ComponentCheck
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// MaxRequestBodyBytes caps request bodies (0: 3 MiB, upstream's limit).
	MaxRequestBodyBytes int64
	// MaxRequestsInFlight is the server's concurrency limit, which the
	// limited priority levels of API Priority and Fairness share by their
	// nominalConcurrencyShares (see seats; 0: 600, upstream's default
	// --max-requests-inflight plus --max-mutating-requests-inflight).
	MaxRequestsInFlight int
	// Audit, if set, writes the audit log (--audit-log-path).
	Audit  *audit.Logger
	Logger *slog.Logger
}

// VersionInfo is the body of /version.
type VersionInfo struct {
	Major, Minor, GitVersion, GitCommit, GoVersion, Platform string
}

// Server is the API server's HTTP handler.
type Server struct {
	cfg    Config
	codecs *codecs
	log    *slog.Logger
	now    func() time.Time
	// stores by group, version and plural.
	stores    map[schema.GroupVersionResource]*resourceStore
	ephemeral map[schema.GroupVersionResource]*registry.Resource
	// streaming names the subresources whose handlers stream
	// (registry.Handler.OwnForm).
	streaming map[string]bool
	discovery *discovery
	// What discovery shows (see setDiscoveryResources and
	// SetAggregatedAPIs), and the aggregated group-versions' routes.
	discoMu         sync.Mutex
	discoResources  []registry.Resource
	discoAggregated []AggregatedAPI
	aggregated      atomic.Pointer[map[schema.GroupVersion]*AggregatedAPI]
	readyOnce       sync.Once
	ready           chan struct{}
	seats           *seats
	metrics         *metrics

	// Custom resources (see SetCustomResources): the served set, replaced
	// whole under customMu, and the watch cache of each, by storage prefix.
	custom   atomic.Pointer[customState]
	customMu sync.Mutex
	crCaches map[string]*sharedCache
	runCtx   context.Context
	gates    []<-chan struct{}
	// crAdvertised identifies what discovery and OpenAPI show of them.
	crAdvertised    string
	crAdvertisedSet bool
	// crMeta is the OpenAPI schema of ObjectMeta and what it refers to,
	// for the field managers of custom resources.
	crMeta struct {
		mu      sync.Mutex
		schemas map[string]*spec.Schema
	}
}

// New builds a Server; call Run to start its caches.
func New(cfg Config) (*Server, error) {
	if cfg.MaxRequestBodyBytes == 0 {
		cfg.MaxRequestBodyBytes = 3 << 20
	}
	if cfg.MaxRequestsInFlight == 0 {
		cfg.MaxRequestsInFlight = 600
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Authorizer == nil {
		cfg.Authorizer = auth.Chain{auth.MastersAuthorizer{}, auth.PublicInfoAuthorizer{}, auth.BasicUserAuthorizer{}, auth.IssuerDiscoveryAuthorizer{}}
	}
	s := &Server{cfg: cfg, codecs: newCodecs(), log: cfg.Logger, now: cfg.Now,
		stores: map[schema.GroupVersionResource]*resourceStore{}, ephemeral: map[schema.GroupVersionResource]*registry.Resource{}, ready: make(chan struct{}),
		seats: newSeats(cfg.MaxRequestsInFlight), crCaches: map[string]*sharedCache{}}
	s.metrics = newMetrics(s)
	if cfg.Metrics != nil {
		s.metrics.register(cfg.Metrics)
	}
	s.streaming = map[string]bool{}
	for i := range cfg.Resources {
		res := &cfg.Resources[i]
		for sub, h := range res.Handlers {
			if h.OwnForm {
				s.streaming[sub] = true
			}
		}
		if res.Ephemeral {
			if res.Handler == nil && res.CreateAs == nil {
				return nil, fmt.Errorf("resource %s is not stored and has no Handler nor CreateAs", res.Kind.GroupVersion().WithResource(res.Plural))
			}
			s.ephemeral[res.Kind.GroupVersion().WithResource(res.Plural)] = res
			continue
		}
		rs, err := newResourceStore(res, cfg.Storage, s.codecs)
		if err != nil {
			return nil, err
		}
		rs.store = s.metrics.meter(rs.store, rs.gr)
		if _, dup := s.stores[rs.gvr]; dup {
			return nil, fmt.Errorf("resource %s registered twice", rs.gvr)
		}
		s.stores[rs.gvr] = rs
	}
	s.discovery = newDiscovery(cfg.Resources)
	s.discoResources = cfg.Resources
	if sa := cfg.ServiceAccounts; sa != nil && sa.Objects == nil {
		sa.Objects = s
	}
	return s, nil
}

// AddReadinessGate makes the server ready only once gate is closed as well
// (e.g. once the custom resources stored are served). Call it before Run.
func (s *Server) AddReadinessGate(gate <-chan struct{}) {
	s.customMu.Lock()
	defer s.customMu.Unlock()
	s.gates = append(s.gates, gate)
}

// Run starts the watch caches and blocks until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	s.startCustomCaches(ctx)
	s.customMu.Lock()
	gates := append([]<-chan struct{}(nil), s.gates...)
	s.customMu.Unlock()
	keys := make([]schema.GroupVersionResource, 0, len(s.stores))
	for k := range s.stores {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	var wg sync.WaitGroup
	for _, k := range keys {
		c := s.stores[k].cache
		wg.Add(1)
		go func() { defer wg.Done(); c.Run(ctx) }()
	}
	// Ready once every cache has loaded its first list.
	go func() {
		for _, k := range keys {
			for !s.stores[k].cache.Ready() {
				select {
				case <-ctx.Done():
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		}
		for _, g := range gates {
			select {
			case <-ctx.Done():
				return
			case <-g:
			}
		}
		s.readyOnce.Do(func() { close(s.ready) })
	}()
	// Drop decoded objects of keys deleted by other API servers.
	sweep := time.NewTicker(5 * time.Minute)
	defer sweep.Stop()
	for {
		select {
		case <-sweep.C:
			for _, k := range keys {
				s.stores[k].sweepDecoded(ctx)
			}
			continue
		case <-ctx.Done():
		}
		break
	}
	wg.Wait()
	return nil
}

// Ready is closed once the server can answer every request.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// ServeHTTP is the whole filter chain: panic recovery, authentication,
// authorization, then routing.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info := parseRequestInfo(r)
	sw := &statusWriter{ResponseWriter: w}
	w = sw
	mutating := r.Method != http.MethodGet && r.Method != http.MethodHead
	var queued time.Duration // waiting for a seat
	// Deferred first, so that they run last: after a panic is answered.
	if m, ok := measure(r, info); ok && (!info.IsResource || s.serves(info)) {
		end := s.metrics.begin(m, mutating)
		ctx, webhooks := admission.TrackWebhookTime(r.Context())
		r = r.WithContext(ctx)
		defer func() { end(sw.status(), sw.written, webhooks.Total()+queued) }()
	}
	inQueue := s.metrics.queued.of(mutating)
	if s.log.Enabled(r.Context(), RequestLogLevel) {
		start := time.Now()
		defer func() { s.logRequest(r, start, sw) }() // r as authenticated, below
	}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic in handler", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			s.codecs.writeError(w, r, apierrors.NewInternalError(fmt.Errorf("panic: %v", p)))
		}
	}()
	user := auth.UserFrom(r.Context())
	if user == nil && s.cfg.Authenticator != nil {
		u, ok, err := s.cfg.Authenticator.Authenticate(r)
		// A credential no authenticator accepts is refused (401), as
		// upstream's bearer-token authentication: only a request without
		// any is anonymous.
		if err != nil || !ok && r.Header.Get("Authorization") != "" {
			s.codecs.writeError(w, r, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		if ok {
			user = u
		}
	}
	if user == nil {
		user = &auth.User{Name: auth.UserAnonymous, Groups: []string{auth.GroupUnauthenticated}}
	}
	// The credentials are the API server's alone: nothing it proxies to (a
	// node, a pod, a Service) sees them, as upstream's.
	r.Header.Del("Authorization")
	authenticated := user
	user, err := s.impersonate(r.Context(), r, user)
	if err != nil {
		s.codecs.writeError(w, r, err)
		return
	}
	r = r.WithContext(auth.WithUser(r.Context(), user))
	attrs := auth.Attributes{User: user, Verb: info.Verb, IsResource: info.IsResource, Path: r.URL.Path,
		APIGroup: info.Group, APIVersion: info.Version, Namespace: info.Namespace, Resource: info.Resource,
		Subresource: info.Subresource, Name: info.Name}
	if !info.IsResource {
		attrs.Verb = nonResourceVerb(r.Method)
	}
	if info.IsResource && (attrs.Verb == "list" || attrs.Verb == "watch" || attrs.Verb == "deletecollection") {
		attrs.FieldSelector = r.URL.Query().Get("fieldSelector")
		attrs.LabelSelector = r.URL.Query().Get("labelSelector")
		if attrs.Name == "" && attrs.Verb != "deletecollection" && attrs.FieldSelector != "" {
			attrs.Name = selectedName(attrs.FieldSelector)
		}
	}
	// Classified before it is authorized, as upstream's API Priority and
	// Fairness, so that a refusal too says how it was classified.
	match, classified := s.seats.classify(priority.Request{User: user.Name, Groups: user.Groups, Verb: attrs.Verb,
		IsResource: info.IsResource, APIGroup: info.Group, Resource: info.Resource, Subresource: info.Subresource,
		Namespace: info.Namespace, Path: r.URL.Path})
	if classified {
		setMatchHeaders(w.Header(), match)
	}
	if s.cfg.Audit != nil {
		var impersonatedBy *auth.User
		if user != authenticated {
			impersonatedBy = authenticated
		}
		if rq := s.cfg.Audit.Begin(w, r, attrs, impersonatedBy, info.Verb == "watch" || s.streaming[info.Subresource]); rq != nil {
			w = rq.Writer()
			r.Body = rq.Body(r.Body)
			defer func() {
				p := recover()
				rq.End(p, s.codecs.auditJSON)
				if p != nil {
					panic(p) // to the recovery above, which answers 500
				}
			}()
		}
	}
	decision, reason, err := s.cfg.Authorizer.Authorize(r.Context(), attrs)
	if err != nil || decision != auth.Allow {
		// Anonymous requests too are refused with 403, as upstream's
		// (only a credential that is not valid gets 401).
		s.codecs.writeError(w, r, forbidden(attrs, reason))
		return
	}
	if info.IsResource || info.Version != "" {
		if info.Verb != "watch" && !s.streaming[info.Subresource] {
			ctx, cancel, err := requestDeadline(r)
			if err != nil {
				s.codecs.writeError(w, r, err)
				return
			}
			defer cancel()
			release, ok := s.takeSeat(ctx, w, r, match, inQueue, &queued)
			if !ok {
				return
			}
			defer release()
			r = r.WithContext(ctx)
			// The body too is read by the deadline: a client that sends it
			// slowly holds its slot no longer than any request. (Not every
			// ResponseWriter can: the in-process transport's has no
			// connection to time out.)
			deadline, _ := ctx.Deadline()
			_ = http.NewResponseController(w).SetReadDeadline(deadline)
		}
		if s.serveAggregated(w, r, info) {
			return
		}
		if info.IsResource {
			if info.Verb == "watch" {
				// A watch holds a seat until its initial events are sent,
				// as upstream's counts a watch's start.
				release, ok := s.takeSeat(r.Context(), w, r, match, inQueue, &queued)
				if !ok {
					return
				}
				started := sync.OnceFunc(release)
				defer started()
				r = r.WithContext(context.WithValue(r.Context(), watchStartedKey{}, started))
			}
			s.serveResource(w, r, info)
			return
		}
	} else {
		release, ok := s.takeSeat(r.Context(), w, r, match, inQueue, &queued)
		if !ok {
			return
		}
		defer release()
	}
	s.serveNonResource(w, r, info)
}

// takeSeat takes a seat of the request's priority level (seats.acquire),
// or answers it 429 (ok false).
func (s *Server) takeSeat(ctx context.Context, w http.ResponseWriter, r *http.Request, m priority.Match, queued queueGauge, waited *time.Duration) (release func(), ok bool) {
	release, ok = s.seats.acquire(ctx, m, queued, waited)
	if !ok {
		s.codecs.writeError(w, r, noSeat())
	}
	return release, ok
}

// noSeat answers a request that found no seat (a full queue, or a wait
// that ended), with upstream's message; clients retry after a second.
func noSeat() error {
	return apierrors.NewTooManyRequests("too many requests, please try again later", 1)
}

// watchStartedKey keys the function a watch calls once its initial events
// are sent, releasing the seat its start took.
type watchStartedKey struct{}

// maxRequestTimeout is how long a request other than a watch or a stream
// may take, as upstream's --request-timeout default.
const maxRequestTimeout = 60 * time.Second

// requestDeadline is r's context with the deadline upstream gives a
// request that is not long-running: ?timeout= if shorter than
// maxRequestTimeout (0 meaning none given), else maxRequestTimeout.
// Storage calls end at the deadline, and the client gets 504.
func requestDeadline(r *http.Request) (context.Context, context.CancelFunc, error) {
	timeout := maxRequestTimeout
	if v := r.URL.Query().Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, nil, apierrors.NewBadRequest("invalid timeout specified in the request URL - " + err.Error())
		}
		if d > 0 && d < timeout {
			timeout = d
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	return ctx, cancel, nil
}

// selectedName is the name a list's or watch's field selector requires
// (metadata.name=x), which authorizers see as the object's name, as
// upstream's: a watch of one Secret is authorized as that Secret.
func selectedName(selector string) string {
	s, err := fields.ParseSelector(selector)
	if err != nil {
		return ""
	}
	if name, ok := s.RequiresExactMatch("metadata.name"); ok && len(pathvalidation.IsValidPathSegmentName(name)) == 0 {
		return name
	}
	return ""
}

func nonResourceVerb(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPost:
		return "post"
	case http.MethodPut:
		return "put"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return method
}

// forbidden builds upstream's 403 message, e.g.
// `pods "x" is forbidden: User "u" cannot get resource "pods" in API group "" in the namespace "ns"`.
func forbidden(a auth.Attributes, reason string) error {
	var msg string
	if !a.IsResource {
		msg = fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
		if reason != "" {
			msg += ": " + reason
		}
		return registry.NewStatusError(http.StatusForbidden, "Forbidden", "forbidden: "+msg)
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q", a.User.Name, a.Verb, res, a.APIGroup)
	if a.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", a.Namespace)
	} else {
		msg += " at the cluster scope"
	}
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.APIGroup, Resource: res}, a.Name, fmt.Errorf("%s", msg))
}
