package sim

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"
)

// Labels and annotations the simulation reads or writes.
const (
	// LabelSimulated marks a Node as driven by a Sim.
	LabelSimulated = "plainkube.dev/simulated"

	// AnnotationStopped, set to "true" on a Node, stops it as a dead machine
	// stops: no Lease renewals, no status updates, no pod updates.
	AnnotationStopped = "sim.plainkube.dev/stopped"

	// Pod annotations set a pod's behaviour (durations in Go syntax, or
	// seconds): its containers start AnnotationStartDelay after the pod
	// is seen, become ready AnnotationReadyAfter after starting, exit
	// AnnotationExitAfter after starting with AnnotationExitCode (default
	// 0), and stop AnnotationStopDelay after a graceful deletion starts
	// (default: at once, with exit code 0, as a program that handles
	// SIGTERM does; a delay of the whole grace period or more: killed at
	// its end, exit code 137). After an exit, spec.restartPolicy
	// is followed as a kubelet does: Never ends in Succeeded or Failed;
	// OnFailure restarts on a non-zero code and Always on any code, with
	// upstream's back-off (immediately the first time, then 10s doubling
	// to 5m) shown as a CrashLoopBackOff waiting state.
	AnnotationStartDelay = "sim.plainkube.dev/start-delay"
	AnnotationReadyAfter = "sim.plainkube.dev/ready-after"
	AnnotationExitAfter  = "sim.plainkube.dev/exit-after"
	AnnotationExitCode   = "sim.plainkube.dev/exit-code"
	AnnotationStopDelay  = "sim.plainkube.dev/stop-delay"
)

// RuntimeVersion is what simulated nodes report as their container runtime
// (status.nodeInfo.containerRuntimeVersion); the sim:// scheme also prefixes
// their container and image IDs.
const RuntimeVersion = "sim://plainkube-0.1"

// Options configure a Sim. The zero value of each field takes its default.
type Options struct {
	// Nodes is how many nodes to run (default 1).
	Nodes int
	// NamePrefix names the nodes: <prefix>0, <prefix>1, … (default "sim-").
	NamePrefix string
	// CPU, Memory and Pods are each node's capacity, also its allocatable
	// (default 8 CPU, 32Gi, 110 pods).
	CPU, Memory resource.Quantity
	Pods        int
	// Zones are spread over the nodes round-robin as
	// topology.kubernetes.io/zone (default zone-a, zone-b, zone-c).
	Zones []string
	// Arch is kubernetes.io/arch and nodeInfo.architecture (default amd64).
	Arch string
	// Labels are added to every node; Taints are set on every node when it
	// is created.
	Labels map[string]string
	Taints []corev1.Taint
	// HeartbeatInterval is how often each node renews its Lease
	// (default 10s).
	HeartbeatInterval time.Duration
	// StatusInterval is the longest a node goes without a status update
	// (default 1m).
	StatusInterval time.Duration
	// Clock drives heartbeats and pod transitions (default the real clock).
	Clock clock.WithTicker
	// Logger (default slog.Default()).
	Logger *slog.Logger

	// instanceType is node.kubernetes.io/instance-type, worked out once
	// (formatting a Quantity caches into it, so it is not done concurrently).
	instanceType string
}

// maxNodes keeps pod CIDRs (10.42.0.0/24 + i) inside 10.0.0.0/8.
const maxNodes = (256 - 42) * 256

func (o Options) withDefaults() (Options, error) {
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.Nodes < 0 || o.Nodes > maxNodes {
		return o, fmt.Errorf("sim: nodes must be between 1 and %d, not %d", maxNodes, o.Nodes)
	}
	if o.NamePrefix == "" {
		o.NamePrefix = "sim-"
	}
	if o.CPU.IsZero() {
		o.CPU = resource.MustParse("8")
	}
	if o.Memory.IsZero() {
		o.Memory = resource.MustParse("32Gi")
	}
	if o.Pods == 0 {
		o.Pods = 110
	}
	if len(o.Zones) == 0 {
		o.Zones = []string{"zone-a", "zone-b", "zone-c"}
	}
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 10 * time.Second
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.instanceType = "sim." + o.CPU.String() + "cpu." + o.Memory.String()
	return o, nil
}

// behaviour is what a pod's annotations ask of its containers.
type behaviour struct {
	startDelay time.Duration
	readyAfter time.Duration
	exits      bool
	exitAfter  time.Duration
	exitCode   int32
	stopDelay  time.Duration
}

func parseBehaviour(ann map[string]string) behaviour {
	var b behaviour
	b.startDelay, _ = parseDuration(ann[AnnotationStartDelay])
	b.readyAfter, _ = parseDuration(ann[AnnotationReadyAfter])
	b.exitAfter, b.exits = parseDuration(ann[AnnotationExitAfter])
	if v, err := strconv.ParseInt(strings.TrimSpace(ann[AnnotationExitCode]), 10, 32); err == nil {
		b.exitCode = int32(v)
	}
	b.stopDelay, _ = parseDuration(ann[AnnotationStopDelay])
	return b
}

// parseDuration reads "1.5s", "2m" or a plain number of seconds; an empty,
// malformed or negative value is absent.
func parseDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return 0, false
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d < 0 {
		return 0, false
	}
	return d, true
}
