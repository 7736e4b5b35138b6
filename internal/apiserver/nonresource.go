package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// serveNonResource answers health, version, discovery and OpenAPI paths.
func (s *Server) serveNonResource(w http.ResponseWriter, r *http.Request, info requestInfo) {
	path := r.URL.Path
	switch {
	case path == "/healthz" || path == "/livez" || strings.HasPrefix(path, "/healthz/") || strings.HasPrefix(path, "/livez/"):
		s.writeHealth(w, r, true)
		return
	case path == "/readyz" || strings.HasPrefix(path, "/readyz/"):
		select {
		case <-s.ready:
			s.writeHealth(w, r, true)
		default:
			s.writeHealth(w, r, false)
		}
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
	case strings.HasPrefix(path, "/openapi/"):
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
		json.NewEncoder(w).Encode(map[string][]string{"paths": {"/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v2", "/openapi/v3", "/readyz", "/version"}})
		return
	}
	s.codecs.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, ""))
}

func (s *Server) writeHealth(w http.ResponseWriter, r *http.Request, ok bool) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !ok {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte("[-]informer-sync failed: watch caches are not ready\nreadyz check failed\n"))
		return
	}
	if r.URL.Query().Has("verbose") {
		w.Write([]byte("[+]ping ok\n[+]etcd ok\n[+]informer-sync ok\nhealthz check passed\n"))
		return
	}
	w.Write([]byte("ok"))
}
