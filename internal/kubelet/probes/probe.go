package probes

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/kubelet/events"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeState is what the agent remembers of one probe of one container
// run.
type probeState struct {
	ContainerID         string
	LastRun             time.Time
	Successes, Failures int32
	// Failed is the probe's result once it has one: Failures reached
	// failureThreshold (and no success since).
	Failed bool
	// Succeeded: Successes reached successThreshold (and no failure
	// since).
	Succeeded bool
}

func seconds(n int32, def int32) time.Duration {
	if n <= 0 {
		n = def
	}
	return time.Duration(n) * time.Second
}

func threshold(n int32, def int32) int32 {
	if n <= 0 {
		return def
	}
	return n
}

// probeDue reports whether p of a container started at started is due at
// now, given its state.
func probeDue(p *corev1.Probe, s probeState, started, now time.Time) bool {
	if now.Before(started.Add(time.Duration(p.InitialDelaySeconds) * time.Second)) {
		return false
	}
	return s.LastRun.IsZero() || !now.Before(s.LastRun.Add(seconds(p.PeriodSeconds, 10)))
}

// probeRecord is s after a probe run at now that succeeded or not.
func probeRecord(p *corev1.Probe, s probeState, ok bool, now time.Time) probeState {
	s.LastRun = now
	if ok {
		s.Successes, s.Failures = s.Successes+1, 0
		if s.Successes >= threshold(p.SuccessThreshold, 1) {
			s.Succeeded, s.Failed = true, false
		}
	} else {
		s.Failures, s.Successes = s.Failures+1, 0
		if s.Failures >= threshold(p.FailureThreshold, 3) {
			s.Failed, s.Succeeded = true, false
		}
	}
	return s
}

// Exec runs a command in a container and returns its output: the CRI
// runtime's ExecSync.
type Exec interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

// Runner runs the probes and lifecycle hooks of the node's containers,
// and remembers the probes' states. It is safe for concurrent use.
type Runner struct {
	exec   Exec
	events *events.Recorder
	log    *slog.Logger
	states states
}

// NewRunner makes a runner that runs exec probes and hooks through exec
// and records events with rec.
func NewRunner(exec Exec, rec *events.Recorder, log *slog.Logger) *Runner {
	return &Runner{exec: exec, events: rec, log: log}
}

// Forget drops the probe states of pod uid.
func (r *Runner) Forget(uid types.UID) { r.states.set(uid, nil) }

// Retain drops the probe states of the pods not in live.
func (r *Runner) Retain(live map[types.UID]bool) { r.states.forget(live) }

// states holds the probe states of every pod, by pod UID and then by
// probe kind and container ID.
type states struct {
	mu sync.Mutex
	m  map[types.UID]map[string]probeState
}

func (ps *states) get(uid types.UID, key string) probeState {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.m[uid][key]
}

// set records states as the whole of pod uid's probe states.
func (ps *states) set(uid types.UID, states map[string]probeState) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = map[types.UID]map[string]probeState{}
	}
	if len(states) == 0 {
		delete(ps.m, uid)
		return
	}
	ps.m[uid] = states
}

// forget drops the states of pods that are not live.
func (ps *states) forget(live map[types.UID]bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for uid := range ps.m {
		if !live[uid] {
			delete(ps.m, uid)
		}
	}
}

// Running is the current run of a container, as the runtime shows it.
type Running struct {
	ID        string
	StartedAt time.Time
}

// Results are what the probes of a pod's running containers found, by
// container name: Ready has the readiness probe result of each that has a
// readiness probe; Started, the startup probe result of each that has a
// startup probe; Unhealthy, for one whose liveness or startup probe
// failed, the message of the Killing event that stops it.
type Results struct {
	Ready, Started map[string]bool
	Unhealthy      map[string]string
}

// Probe runs the due startup, readiness and liveness probes of pod's
// running containers (running, by name; podIP is the pod's address) and
// returns their results. As upstream, readiness and liveness probes wait
// until the startup probe has succeeded, and the startup probe stops once
// it has. Every failed run records an Unhealthy event.
func (r *Runner) Probe(ctx context.Context, pod *corev1.Pod, running map[string]Running, podIP string) Results {
	states := map[string]probeState{}
	res := Results{Ready: map[string]bool{}, Started: map[string]bool{}, Unhealthy: map[string]string{}}
	now := time.Now()
	var probed []*corev1.Container // sidecars and the others
	for i := range pod.Spec.InitContainers {
		if podutil.IsSidecar(&pod.Spec.InitContainers[i]) {
			probed = append(probed, &pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		probed = append(probed, &pod.Spec.Containers[i])
	}
	for _, c := range probed {
		run, ok := running[c.Name]
		if !ok || pod.DeletionTimestamp != nil {
			continue
		}
		for _, k := range []struct {
			kind  string
			probe *corev1.Probe
		}{{"Startup", c.StartupProbe}, {"Readiness", c.ReadinessProbe}, {"Liveness", c.LivenessProbe}} {
			if k.probe == nil {
				continue
			}
			key := k.kind + "/" + run.ID
			s := r.states.get(pod.UID, key)
			s.ContainerID = run.ID
			started := c.StartupProbe == nil || res.Started[c.Name]
			due := probeDue(k.probe, s, run.StartedAt, now) &&
				(k.kind == "Startup" && !s.Succeeded || k.kind != "Startup" && started)
			if due {
				err := r.run(ctx, pod, run.ID, podIP, k.probe)
				s = probeRecord(k.probe, s, err == nil, now)
				if err != nil {
					r.events.Record(pod, c.Name, corev1.EventTypeWarning, events.Unhealthy, "%s probe failed: %s", k.kind, err.Error())
				}
				if err != nil && s.Failed && k.kind != "Readiness" {
					msg := fmt.Sprintf("Container %s failed %s probe, will be restarted", c.Name, strings.ToLower(k.kind))
					r.log.Info(msg, "pod", pod.Namespace+"/"+pod.Name, "err", err)
					res.Unhealthy[c.Name] = msg
				}
			}
			states[key] = s
			switch k.kind {
			case "Startup":
				res.Started[c.Name] = s.Succeeded
			case "Readiness":
				res.Ready[c.Name] = s.Succeeded
			}
		}
	}
	r.states.set(pod.UID, states)
	return res
}

// probeClient is an HTTP client for probes and hooks: as upstream, no
// proxy, no keep-alive, certificates not checked.
func probeClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		Proxy: nil, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
}

// run runs probe pr of container id once: nil means success; an
// error's text is what the Unhealthy event shows.
func (r *Runner) run(ctx context.Context, pod *corev1.Pod, id, ip string, pr *corev1.Probe) error {
	timeout := seconds(pr.TimeoutSeconds, 1)
	switch {
	case pr.Exec != nil:
		stdout, stderr, err := r.exec.ExecSync(ctx, id, pr.Exec.Command, timeout)
		if err != nil {
			if out := string(stdout) + string(stderr); out != "" {
				return errors.New(out)
			}
			return err
		}
		return nil
	case pr.HTTPGet != nil:
		req, err := httpGetRequest(ctx, pod, pr.HTTPGet, ip, "kube-probe/plainkube")
		if err != nil {
			return err
		}
		resp, err := probeClient(timeout).Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return nil
	case pr.TCPSocket != nil:
		port, err := probePort(pod, pr.TCPSocket.Port)
		if err != nil {
			return err
		}
		host := ip
		if pr.TCPSocket.Host != "" {
			host = pr.TCPSocket.Host
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), timeout)
		if err != nil {
			return err
		}
		return conn.Close()
	case pr.GRPC != nil:
		service := ""
		if pr.GRPC.Service != nil {
			service = *pr.GRPC.Service
		}
		return grpcProbe(ctx, net.JoinHostPort(ip, strconv.Itoa(int(pr.GRPC.Port))), service, timeout)
	}
	return fmt.Errorf("probe handler not supported")
}

// grpcProbe asks the gRPC health service (grpc.health.v1) at addr whether
// service is serving, as upstream's gRPC prober does (plaintext).
func grpcProbe(ctx context.Context, addr, service string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("kube-probe/plainkube"))
	if err != nil {
		return fmt.Errorf("failed to connect service %q: %w", addr, err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		switch status.Code(err) {
		case codes.Unimplemented:
			return fmt.Errorf("this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", status.Convert(err).Message())
		case codes.DeadlineExceeded:
			return fmt.Errorf("timeout: health rpc did not complete within %v", timeout)
		}
		return fmt.Errorf("error: health rpc probe failed: %v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("service unhealthy (responded with %q)", resp.GetStatus().String())
	}
	return nil
}

// probePort resolves a probe's port, by number or by a container port's
// name.
func probePort(pod *corev1.Pod, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == port.StrVal {
				return int(p.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("no port named %q", port.StrVal)
}

// httpGetRequest is the GET of an httpGet probe or hook: to g.Host, else
// the pod's IP, at g's port (a number or a container port's name) and
// path (with its query, if any), with userAgent (if any) and then g's
// headers.
func httpGetRequest(ctx context.Context, pod *corev1.Pod, g *corev1.HTTPGetAction, podIP, userAgent string) (*http.Request, error) {
	port, err := probePort(pod, g.Port)
	if err != nil {
		return nil, err
	}
	host := podIP
	if g.Host != "" {
		host = g.Host
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	// The path may carry a query ("/dial?host=…"), as upstream's kubelet
	// reads it; one that does not parse is taken as a plain path.
	u, err := url.Parse(g.Path)
	if err != nil {
		u = &url.URL{Path: g.Path}
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if userAgent != "" {
		req.Header.Set("User-Agent", userAgent)
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	return req, nil
}
