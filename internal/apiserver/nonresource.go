package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// serveNonResource answers health, version, discovery and OpenAPI paths.
func (s *Server) serveNonResource(w http.ResponseWriter, r *http.Request, info requestInfo) {
	path := r.URL.Path
	switch {
	case path == "/healthz" || path == "/livez" || path == "/readyz":
		s.serveHealth(w, r, path[1:], "")
		return
	case strings.HasPrefix(path, "/healthz/") || strings.HasPrefix(path, "/livez/") || strings.HasPrefix(path, "/readyz/"):
		endpoint, check, _ := strings.Cut(path[1:], "/")
		s.serveHealth(w, r, endpoint, check)
		return
	case path == "/version" || path == "/version/":
		w.Header().Set("Content-Type", "application/json")
		v := s.cfg.Version
		json.NewEncoder(w).Encode(map[string]string{
			"major": v.Major, "minor": v.Minor, "gitVersion": v.GitVersion, "gitCommit": v.GitCommit,
			"gitTreeState": "clean", "buildDate": "", "goVersion": v.GoVersion, "compiler": "gc", "platform": v.Platform,
			"emulationMajor": v.Major, "emulationMinor": v.Minor, "minCompatibilityMajor": v.Major, "minCompatibilityMinor": v.Minor,
		})
		return
	case path == "/metrics" && s.cfg.Metrics != nil:
		// As upstream's: authorized like any non-resource path (get on
		// /metrics, which system:monitoring grants).
		promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		return
	case strings.HasPrefix(path, "/debug/pprof"):
		// Go's profiler, as upstream's --profiling (authorized like any
		// non-resource path: the admin group only, today).
		switch strings.TrimPrefix(path, "/debug/pprof/") {
		case "cmdline":
			pprof.Cmdline(w, r)
		case "profile":
			pprof.Profile(w, r)
		case "symbol":
			pprof.Symbol(w, r)
		case "trace":
			pprof.Trace(w, r)
		default:
			pprof.Index(w, r)
		}
		return
	case path == "/.well-known/openid-configuration" || path == "/openid/v1/jwks":
		if s.serveIssuerDiscovery(w, r) {
			return
		}
	case strings.HasPrefix(path, "/openapi/"):
		if s.serveAggregated(w, r, info) {
			return
		}
		if s.cfg.OpenAPI != nil {
			s.cfg.OpenAPI.ServeHTTP(w, r)
			return
		}
	case r.Method == http.MethodGet && (strings.HasPrefix(path, "/api") || strings.HasPrefix(path, "/apis")):
		if s.discovery.serve(w, r) {
			return
		}
	case path == "/":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string][]string{"paths": {"/api", "/api/v1", "/apis", "/healthz", "/livez", "/metrics", "/openapi/v2", "/openapi/v3", "/readyz", "/version"}})
		return
	}
	s.codecs.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, ""))
}

// serveIssuerDiscovery serves the service-account issuer's OpenID Connect
// discovery document and its key set, as upstream does when the issuer is
// an https URL. The jwks_uri is on the address the client used, since
// this server is not told its external address. false: not served.
func (s *Server) serveIssuerDiscovery(w http.ResponseWriter, r *http.Request) bool {
	sa := s.cfg.ServiceAccounts
	if sa == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	var body []byte
	contentType := "application/json"
	if r.URL.Path == "/openid/v1/jwks" {
		body, contentType = sa.JWKS(), "application/jwk-set+json"
	} else {
		var ok bool
		if body, ok = sa.OpenIDConfiguration((&url.URL{Scheme: "https", Host: r.Host, Path: "/openid/v1/jwks"}).String()); !ok {
			return false
		}
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Write(body)
	return true
}
