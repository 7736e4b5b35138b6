package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/kubelet/podstatus"
)

// Upstream's container restart back-off: none the first time, then 10s
// doubling to 5m; a container that ran for twice the maximum starts afresh.
const (
	crashBackoffInitial = 10 * time.Second
	crashBackoffMax     = 5 * time.Minute
)

// Reasons and messages a kubelet reports.
const (
	reasonContainerCreating  = "ContainerCreating"
	reasonPodInitializing    = "PodInitializing"
	reasonCrashLoopBackOff   = "CrashLoopBackOff"
	reasonCompleted          = "Completed"
	reasonError              = "Error"
	reasonNotInitialized     = "ContainersNotInitialized"
	reasonContainersNotReady = "ContainersNotReady"
	reasonPodCompleted       = "PodCompleted"
	reasonGatesNotReady      = "ReadinessGatesNotReady"

	// exitKilled is the code of a container killed at the end of its grace
	// period (128 + SIGKILL).
	exitKilled = 137
)

// maxSteps bounds the transitions one decide makes per container while
// catching up (a crash-looping container makes one per back-off).
const maxSteps = 1000

// podEnv is what decide needs to know of the pod's node.
type podEnv struct {
	hostIP string
	// podIP is the address allocated to the pod, used when its status has
	// none yet; empty when none is free.
	podIP string
	// allocatable and used are, for a resize, the node's allocatable cpu
	// and memory and what its other active pods request of them;
	// allocatable nil: any resize fits.
	allocatable, used corev1.ResourceList
}

// decision is what the kubelet should do with a pod now.
type decision struct {
	// status is the pod's status as the kubelet reports it at now.
	status corev1.PodStatus
	// next is when the next transition is due; zero when none is.
	next time.Time
	// delete: remove the pod (gracePeriodSeconds=0, UID precondition),
	// after writing status.
	delete bool
}

// decide is the pod lifecycle: from the pod as stored (spec, annotations,
// and the status that records how far it has got), the node's addresses
// and the time, it computes the status a kubelet would report, catching up
// on every transition due by now at the time it was due, and when the next
// one is. It has no side effects and keeps what others own in the status
// (PodScheduled, readiness gate conditions, nominatedNodeName, qosClass).
func decide(pod *corev1.Pod, env podEnv, now time.Time) decision {
	st := pod.Status.DeepCopy()
	if terminal(st.Phase) {
		return decision{status: *st, delete: pod.DeletionTimestamp != nil}
	}
	b := parseBehaviour(pod.Annotations)
	if pod.DeletionTimestamp != nil {
		return decideDeletion(pod, st, b, now)
	}
	if st.ObservedGeneration < pod.Generation {
		st.ObservedGeneration = pod.Generation
	}
	if st.StartTime == nil {
		if env.podIP == "" && !pod.Spec.HostNetwork {
			// No address free: the sandbox cannot be created yet.
			return decision{status: *st, next: now.Add(time.Second)}
		}
		start(pod, st, env, now)
	}
	ensureStatuses(pod, st)
	next, initDone := advance(pod, st, b, now)
	finish(pod, st, initDone, now)
	if resize(pod, st, env.allocatable, env.used, now) && (next.IsZero() || next.After(now.Add(podstatus.DeferredResizeRetry))) {
		next = now.Add(podstatus.DeferredResizeRetry)
	}
	if terminal(st.Phase) {
		next = time.Time{}
	}
	return decision{status: *st, next: next}
}

// start is the first status: the pod is accepted, its sandbox has an
// address, no container has been created.
func start(pod *corev1.Pod, st *corev1.PodStatus, env podEnv, now time.Time) {
	t := podstatus.Stamp(now)
	st.StartTime = &t
	st.Phase = corev1.PodPending
	st.HostIP, st.HostIPs = env.hostIP, []corev1.HostIP{{IP: env.hostIP}}
	ip := env.podIP
	if pod.Spec.HostNetwork {
		ip = env.hostIP
	}
	st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
}

// ensureStatuses gives every container of the spec a status, in upstream's
// order (init containers as in the spec, the others by name), and drops
// statuses of containers the spec does not have.
func ensureStatuses(pod *corev1.Pod, st *corev1.PodStatus) {
	initWaiting := reasonContainerCreating
	if len(pod.Spec.InitContainers) > 0 {
		initWaiting = reasonPodInitializing
	}
	st.InitContainerStatuses = statusesFor(pod.Spec.InitContainers, st.InitContainerStatuses, reasonPodInitializing)
	st.ContainerStatuses = statusesFor(pod.Spec.Containers, st.ContainerStatuses, initWaiting)
	slices.SortStableFunc(st.ContainerStatuses, func(a, b corev1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
}

func statusesFor(containers []corev1.Container, have []corev1.ContainerStatus, waiting string) []corev1.ContainerStatus {
	if len(containers) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, 0, len(containers))
	for _, c := range containers {
		if i := slices.IndexFunc(have, func(s corev1.ContainerStatus) bool { return s.Name == c.Name }); i >= 0 {
			out = append(out, have[i])
			continue
		}
		out = append(out, corev1.ContainerStatus{
			Name:    c.Name,
			Image:   c.Image,
			State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}},
			Started: ptrTo(false),
		})
	}
	return out
}

// advance makes every transition due by now, each at the time it was due,
// and returns when the next one is and whether initialization is done.
func advance(pod *corev1.Pod, st *corev1.PodStatus, b behaviour, now time.Time) (time.Time, bool) {
	var next time.Time
	soonest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	// t is when the next container may start: containers are created
	// start-delay after the pod was accepted, each init container after the
	// one before it has completed (or, for a sidecar, started).
	t := st.StartTime.Add(b.startDelay)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := &st.InitContainerStatuses[i]
		if cs.State.Waiting != nil {
			if t.After(now) {
				soonest(t)
				return next, false
			}
			run(pod, c, cs, t)
		}
		if r := cs.State.Running; r != nil {
			if podutil.IsSidecar(c) {
				cs.Ready = true
				t = later(t, r.StartedAt.Time)
				continue
			}
			// An init container completes as soon as it has started.
			terminate(cs, r.StartedAt.Time, 0)
		}
		if term := cs.State.Terminated; term != nil {
			t = later(t, term.FinishedAt.Time)
		}
	}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		c := containerNamed(pod.Spec.Containers, cs.Name)
		if c == nil {
			continue
		}
		if w := cs.State.Waiting; w != nil && cs.LastTerminationState.Terminated == nil && w.Reason == reasonPodInitializing {
			w.Reason = reasonContainerCreating
		}
		if at := stepContainer(pod, c, cs, b, t, now); !at.IsZero() {
			soonest(at)
		}
	}
	return next, true
}

// stepContainer moves a regular container through every transition due by
// now and returns when its next one is due (zero: none).
func stepContainer(pod *corev1.Pod, c *corev1.Container, cs *corev1.ContainerStatus, b behaviour, startAt, now time.Time) time.Time {
	for range maxSteps {
		switch {
		case cs.State.Running != nil:
			started := cs.State.Running.StartedAt.Time
			exitAt := started.Add(b.exitAfter)
			readyAt := started.Add(b.readyAfter)
			var next time.Time
			if !cs.Ready && (!b.exits || readyAt.Before(exitAt)) {
				if readyAt.After(now) {
					next = readyAt
				} else {
					cs.Ready = true
				}
			}
			if !b.exits {
				return next
			}
			if exitAt.After(now) {
				if next.IsZero() {
					next = exitAt
				}
				return next
			}
			terminate(cs, exitAt, b.exitCode)
		case cs.State.Terminated != nil:
			term := cs.State.Terminated
			if !restarts(pod.Spec.RestartPolicy, term.ExitCode) {
				return time.Time{}
			}
			restartAt := term.FinishedAt.Add(crashBackoff(cs.RestartCount, term))
			cs.LastTerminationState = corev1.ContainerState{Terminated: term}
			if restartAt.After(now) {
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason:  reasonCrashLoopBackOff,
					Message: backoffMessage(pod, c.Name, crashBackoff(cs.RestartCount, term)),
				}}
				return restartAt
			}
			cs.RestartCount++
			run(pod, c, cs, restartAt)
		case cs.LastTerminationState.Terminated != nil:
			// Waiting out a back-off.
			term := cs.LastTerminationState.Terminated
			restartAt := term.FinishedAt.Add(crashBackoff(cs.RestartCount, term))
			if restartAt.After(now) {
				return restartAt
			}
			cs.RestartCount++
			run(pod, c, cs, restartAt)
		default:
			// Not created yet.
			if startAt.After(now) {
				return startAt
			}
			run(pod, c, cs, startAt)
		}
	}
	return now // caught up as far as one call goes; carry on at once
}

// finish sets the phase and the kubelet's pod conditions from the
// container statuses.
func finish(pod *corev1.Pod, st *corev1.PodStatus, initDone bool, now time.Time) {
	st.Phase = phase(pod, st, initDone)
	done := terminal(st.Phase)
	if done {
		// Sidecars are stopped once the main containers have exited.
		var last time.Time
		for _, cs := range st.ContainerStatuses {
			if term := cs.State.Terminated; term != nil {
				last = later(last, term.FinishedAt.Time)
			}
		}
		for i := range st.InitContainerStatuses {
			if st.InitContainerStatuses[i].State.Running != nil {
				terminate(&st.InitContainerStatuses[i], last, 0)
			}
		}
	}
	setConditions(pod, st, now)
}

// setConditions sets PodReadyToStartContainers, Initialized,
// ContainersReady and Ready from the container statuses and phase.
func setConditions(pod *corev1.Pod, st *corev1.PodStatus, now time.Time) {
	done := terminal(st.Phase)
	gen := pod.Generation
	set := func(c corev1.PodCondition) {
		c.ObservedGeneration = gen
		podstatus.SetCondition(st, c, now)
	}
	if done {
		set(corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse})
	} else {
		set(corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue})
	}

	var incomplete []string
	for i, c := range pod.Spec.InitContainers {
		cs := st.InitContainerStatuses[i]
		switch {
		case podutil.IsSidecar(&c) && (cs.State.Running != nil || (done && cs.State.Terminated != nil)):
		case !podutil.IsSidecar(&c) && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
		default:
			incomplete = append(incomplete, c.Name)
		}
	}
	if len(incomplete) == 0 {
		set(corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue})
	} else {
		set(corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: reasonNotInitialized,
			Message: fmt.Sprintf("containers with incomplete status: %s", incomplete)})
	}

	var unready []string
	for i, c := range pod.Spec.InitContainers {
		if podutil.IsSidecar(&c) && !st.InitContainerStatuses[i].Ready {
			unready = append(unready, c.Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		if i := slices.IndexFunc(st.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == c.Name }); i < 0 || !st.ContainerStatuses[i].Ready {
			unready = append(unready, c.Name)
		}
	}
	containersReady := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}
	switch {
	case st.Phase == corev1.PodSucceeded:
		containersReady = corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reasonPodCompleted}
	case len(unready) > 0:
		containersReady = corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reasonContainersNotReady,
			Message: fmt.Sprintf("containers with unready status: %s", unready)}
	}
	set(containersReady)

	ready := containersReady
	ready.Type = corev1.PodReady
	if ready.Status == corev1.ConditionTrue {
		var msgs []string
		for _, g := range pod.Spec.ReadinessGates {
			i := slices.IndexFunc(st.Conditions, func(c corev1.PodCondition) bool { return c.Type == g.ConditionType })
			switch {
			case i < 0:
				msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
			case st.Conditions[i].Status != corev1.ConditionTrue:
				msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), st.Conditions[i].Status))
			}
		}
		if len(msgs) > 0 {
			ready = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reasonGatesNotReady, Message: strings.Join(msgs, ", ")}
		}
	}
	set(ready)
}

// phase is upstream's pod phase of a pod that is not being deleted.
func phase(pod *corev1.Pod, st *corev1.PodStatus, initDone bool) corev1.PodPhase {
	if !initDone {
		return corev1.PodPending
	}
	return podstatus.Phase(pod, st.ContainerStatuses)
}

// decideDeletion handles a pod marked for graceful deletion: its
// containers stop when the grace period is over (or earlier with the
// stop-delay annotation), it is reported terminal, then it is deleted.
// A pod with nothing running goes at once.
func decideDeletion(pod *corev1.Pod, st *corev1.PodStatus, b behaviour, now time.Time) decision {
	if st.StartTime == nil {
		return decision{status: *st, delete: true} // never started here
	}
	running := false
	for _, cs := range append(slices.Clone(st.InitContainerStatuses), st.ContainerStatuses...) {
		running = running || cs.State.Running != nil
	}
	var grace time.Duration
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	stopAt, code := now, int32(0)
	if running && grace > 0 {
		// The containers exit cleanly when asked to stop, as most
		// programs do on SIGTERM, unless the stop-delay annotation asks
		// for a slower stop; one that outlasts the grace period is killed.
		stopAt = pod.DeletionTimestamp.Add(b.stopDelay - grace)
		if b.stopDelay >= grace {
			stopAt, code = pod.DeletionTimestamp.Time, exitKilled
		}
		if stopAt.After(now) {
			return decision{status: *st, next: stopAt}
		}
	} else if running {
		code = exitKilled
	}
	stopAt = earlier(stopAt, now)
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			if list[i].State.Running != nil {
				terminate(&list[i], stopAt, code)
			}
		}
	}
	st.Phase = corev1.PodSucceeded
	for _, cs := range st.ContainerStatuses {
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			st.Phase = corev1.PodFailed
		}
	}
	setConditions(pod, st, now)
	return decision{status: *st, delete: true}
}

// run starts (or restarts) a container at t.
func run(pod *corev1.Pod, c *corev1.Container, cs *corev1.ContainerStatus, t time.Time) {
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: podstatus.Stamp(t)}}
	cs.Started = ptrTo(true)
	cs.Ready = false
	cs.Image = c.Image
	cs.ImageID = imageID(c.Image)
	cs.ContainerID = containerID(pod, c.Name, cs.RestartCount)
	if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
		cs.Resources = &corev1.ResourceRequirements{Requests: c.Resources.Requests.DeepCopy(), Limits: c.Resources.Limits.DeepCopy()}
	}
}

// terminate records a running container's exit at t with code.
func terminate(cs *corev1.ContainerStatus, t time.Time, code int32) {
	var started metav1.Time
	if r := cs.State.Running; r != nil {
		started = r.StartedAt
	}
	reason := reasonCompleted
	if code != 0 {
		reason = reasonError
	}
	cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: podstatus.Stamp(t), ContainerID: cs.ContainerID,
	}}
	cs.Ready = false
	cs.Started = ptrTo(false)
}

func restarts(policy corev1.RestartPolicy, code int32) bool {
	return policy == corev1.RestartPolicyAlways || (policy == corev1.RestartPolicyOnFailure && code != 0)
}

// crashBackoff is how long a container that has restarted restartCount
// times waits after its last exit before it starts again.
func crashBackoff(restartCount int32, last *corev1.ContainerStateTerminated) time.Duration {
	if restartCount == 0 || last.FinishedAt.Sub(last.StartedAt.Time) >= 2*crashBackoffMax {
		return 0
	}
	d := crashBackoffInitial
	for i := int32(1); i < restartCount && d < crashBackoffMax; i++ {
		d *= 2
	}
	return min(d, crashBackoffMax)
}

func backoffMessage(pod *corev1.Pod, container string, d time.Duration) string {
	return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", d, container, pod.Name, pod.Namespace, pod.UID)
}

func containerNamed(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func terminal(p corev1.PodPhase) bool { return p == corev1.PodSucceeded || p == corev1.PodFailed }

func imageID(image string) string {
	sum := sha256.Sum256([]byte(image))
	return "sim://sha256:" + hex.EncodeToString(sum[:])
}

func containerID(pod *corev1.Pod, name string, restart int32) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d", pod.UID, name, restart))
	return "sim://" + hex.EncodeToString(sum[:])
}

// stamp is t as the API stores it: to the second.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func ptrTo[T any](v T) *T { return &v }
