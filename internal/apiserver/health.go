package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"plainkube.dev/plainkube/internal/registry"
)

// HealthCheck is one named check of /livez, /readyz and /healthz, also
// served alone at /livez/<name> or /readyz/<name>.
type HealthCheck struct {
	Name string
	// Check answers nil when healthy; api is the server itself, for a
	// check that reads an object (a component's Lease).
	Check func(ctx context.Context, api registry.API) error
}

// healthChecks are the checks of one health endpoint ("livez", "readyz",
// "healthz"): ping, the configured live checks, and for readyz the ready
// checks and informer-sync (every readiness gate closed).
func (s *Server) healthChecks(endpoint string) []HealthCheck {
	checks := []HealthCheck{{Name: "ping", Check: func(context.Context, registry.API) error { return nil }}}
	checks = append(checks, s.cfg.LiveChecks...)
	if endpoint != "readyz" {
		return checks
	}
	checks = append(checks, s.cfg.ReadyChecks...)
	return append(checks, HealthCheck{Name: "informer-sync", Check: func(context.Context, registry.API) error {
		select {
		case <-s.ready:
			return nil
		default:
			return fmt.Errorf("not every watch cache and in-process reader has synced")
		}
	}})
}

// serveHealth answers /livez, /readyz and /healthz as upstream's: "ok",
// or with ?verbose one line per check; on a failure 500 with every
// check's line and no reason (the endpoints are public: the reasons go to
// the log, and to /readyz/<name>, which answers "internal server error:
// <reason>"). ?exclude=<name> skips a check.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request, endpoint, check string) {
	checks := s.healthChecks(endpoint)
	api := &handlerAPI{s: s}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if check != "" {
		i := slices.IndexFunc(checks, func(c HealthCheck) bool { return c.Name == check })
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		if err := checks[i].Check(r.Context(), api); err != nil {
			http.Error(w, "internal server error: "+err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
		return
	}
	excluded := sets.New[string]()
	for _, e := range r.URL.Query()["exclude"] {
		excluded.Insert(strings.Split(e, ",")...)
	}
	unmatched := excluded.Clone()
	var out strings.Builder
	var failed []string
	for _, c := range checks {
		if excluded.Has(c.Name) {
			unmatched.Delete(c.Name)
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
			continue
		}
		if err := c.Check(r.Context(), api); err != nil {
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name)
			failed = append(failed, c.Name)
			s.log.Info(endpoint+" check failed", "check", c.Name, "err", err)
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
	}
	if unmatched.Len() > 0 {
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %q\n", sets.List(unmatched))
	}
	if len(failed) > 0 {
		http.Error(w, out.String()+endpoint+" check failed", http.StatusInternalServerError)
		return
	}
	if !r.URL.Query().Has("verbose") {
		fmt.Fprint(w, "ok")
		return
	}
	fmt.Fprint(w, out.String()+endpoint+" check passed\n")
}
