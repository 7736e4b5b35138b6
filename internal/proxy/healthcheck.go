package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// healthServers answer on each healthCheckNodePort of the Services with
// externalTrafficPolicy Local, as upstream's kube-proxy does, so that a
// load balancer sends traffic only to nodes with endpoints: 200 with the
// count of local endpoints, 503 when there is none.
type healthServers struct {
	log *slog.Logger

	mu      sync.Mutex
	servers map[string]*healthServer // by Service key
}

type healthServer struct {
	srv   *http.Server
	port  int32
	mu    sync.Mutex
	check healthCheck
}

func newHealthServers(log *slog.Logger) *healthServers {
	return &healthServers{log: log, servers: map[string]*healthServer{}}
}

// update sets the checks of the Services in keys (a Service of keys
// without a check loses its server); with all, Services not in keys lose
// theirs too.
func (h *healthServers) update(keys []string, checks map[string]*healthCheck, all bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	inKeys := map[string]bool{}
	for _, k := range keys {
		inKeys[k] = true
	}
	for key, s := range h.servers {
		c := checks[key]
		if (inKeys[key] || all) && (c == nil || c.port != s.port) {
			s.srv.Close()
			delete(h.servers, key)
		}
	}
	for key, c := range checks {
		s, ok := h.servers[key]
		if !ok {
			var err error
			if s, err = h.listen(*c); err != nil {
				h.log.Warn("health check node port", "service", key, "port", c.port, "err", err)
				continue
			}
			h.servers[key] = s
		}
		s.mu.Lock()
		s.check = *c
		s.mu.Unlock()
	}
}

func (h *healthServers) listen(c healthCheck) (*healthServer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(int(c.port))))
	if err != nil {
		return nil, err
	}
	s := &healthServer{port: c.port, check: c}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Warn("health check server", "port", c.port, "err", err)
		}
	}()
	return s, nil
}

func (s *healthServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	c := s.check
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(c.localEndpoints))
	if c.localEndpoints == 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(map[string]any{
		"service":             map[string]string{"namespace": c.namespace, "name": c.name},
		"localEndpoints":      c.localEndpoints,
		"serviceProxyHealthy": true,
	})
}

func (h *healthServers) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for key, s := range h.servers {
		s.srv.Shutdown(ctx)
		delete(h.servers, key)
	}
}
