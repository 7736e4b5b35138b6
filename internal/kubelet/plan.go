package kubelet

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/kubelet/podstatus"
	"plainkube.dev/plainkube/internal/kubelet/probes"
	"plainkube.dev/plainkube/internal/kubelet/runtime"
)

// This file is the pure core of the agent: what to do for one pod, and what
// its status is, as functions of the pod, what the runtime shows and the
// time. It has no I/O, goroutines or clock; the sync in agent.go and apply.go
// drives it.

// observed is what the agent knows of one pod's containers: what the
// runtime shows, and what its probes and start attempts found.
type observed struct {
	runtime.Pod
	// Ready has the readiness probe result of each running container
	// that has a readiness probe; Started, the startup probe result of
	// each that has a startup probe. Unhealthy has, for a running
	// container whose liveness or startup probe failed, the message of
	// the Killing event that stops it.
	Ready, Started map[string]bool
	Unhealthy      map[string]string
	// StartErrors says why a container could not be started, by name:
	// Reason CreateContainerConfigError (its environment, volumes or
	// security context do not allow it), CreateContainerError,
	// RunContainerError or PostStartHookError.
	StartErrors map[string]corev1.ContainerStateWaiting
	// Applied has the resources each running container runs with, by ID;
	// ResizePending, the PodResizePending condition of a resize the node
	// has not allocated yet (resize.go).
	Applied       map[string]corev1.ResourceRequirements
	ResizePending *corev1.PodCondition
}

// actionKind is what the driver does to the runtime or the API.
type actionKind int

const (
	actRunSandbox      actionKind = iota // RunPodSandbox with Attempt
	actStartContainer                    // CreateContainer+StartContainer Container at Attempt
	actStopContainer                     // StopContainer ID with Grace seconds
	actRemoveContainer                   // RemoveContainer ID
	actStopSandbox                       // StopPodSandbox ID
	actRemoveSandbox                     // RemovePodSandbox ID
	actDeletePod                         // delete the pod object (grace 0, UID precondition)
	actResizeContainer                   // UpdateContainerResources ID to Container's resources
)

func (k actionKind) String() string {
	return [...]string{"RunSandbox", "StartContainer", "StopContainer", "RemoveContainer", "StopSandbox", "RemoveSandbox", "DeletePod", "ResizeContainer"}[k]
}

type action struct {
	Kind      actionKind
	ID        string // container or sandbox
	Container string // spec container name
	Attempt   uint32
	Grace     int64
	// Message is the Killing event's message of a stop ("": upstream's
	// "Stopping container <name>").
	Message string
}

func (a action) String() string {
	s := a.Kind.String()
	if a.Container != "" {
		s += " " + a.Container
	}
	if a.ID != "" {
		s += " " + runtime.ShortID(a.ID)
	}
	if a.Kind == actRunSandbox || a.Kind == actStartContainer {
		s += fmt.Sprintf(" #%d", a.Attempt)
	}
	if a.Kind == actStopContainer {
		s += fmt.Sprintf(" grace=%ds", a.Grace)
	}
	return s
}

// Back-off between restarts of a crashing container, as upstream: the
// first restart is immediate, then 10s doubling up to 5m; a container that
// ran for 10 minutes before exiting starts the sequence again.
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 5 * time.Minute
	backoffReset   = 10 * time.Minute
)

// restartDelay is how long after run exited its container may start again.
func restartDelay(run runtime.Container) time.Duration {
	// A run that never started (its start failed) ran for no time.
	ranLong := !run.StartedAt.IsZero() && run.FinishedAt.Sub(run.StartedAt) >= backoffReset
	if run.Attempt == 0 || ranLong {
		return 0
	}
	d := backoffInitial
	for i := uint32(1); i < run.Attempt && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}

// restarts reports whether policy restarts a container that exited with code.
func restarts(policy corev1.RestartPolicy, code int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return code != 0
	default:
		return true
	}
}

func terminal(p corev1.PodPhase) bool { return p == corev1.PodSucceeded || p == corev1.PodFailed }

// defaultGrace is the stop grace period when the pod names none.
const defaultGrace = 30

// plan is what to do for pod given what the runtime shows at now, and
// when (if ever) to look again without any change to the pod: the time a
// back-off ends. It is level-based: applying the actions and planning
// again converges, and an empty plan means the pod is where it should be.
func plan(pod *corev1.Pod, obs observed, now time.Time) (acts []action, next time.Time) {
	if pod.DeletionTimestamp != nil {
		return planDeletion(pod, obs, now), time.Time{}
	}
	_, initFailed := initProgress(pod, obs)
	overdue, deadline := deadlineExceeded(pod, now)
	done := terminal(pod.Status.Phase) || allDone(pod, obs) || initFailed || overdue
	if done {
		// Finished pods keep their (exited) containers for their status
		// and logs, but not a running sandbox.
		for name, runs := range obs.Containers {
			for _, r := range runs {
				if r.State == runtime.Running {
					acts = append(acts, action{Kind: actStopContainer, ID: r.ID, Container: name, Grace: gracePeriod(pod)})
				}
			}
		}
		if obs.Sandbox != nil && obs.Sandbox.Ready {
			acts = append(acts, action{Kind: actStopSandbox, ID: obs.Sandbox.ID})
		}
		return acts, time.Time{}
	}
	for _, id := range obs.Others {
		acts = append(acts, action{Kind: actStopSandbox, ID: id}, action{Kind: actRemoveSandbox, ID: id})
	}
	if obs.Sandbox == nil || !obs.Sandbox.Ready {
		// A new sandbox; the containers of a dead one go with it.
		attempt := uint32(0)
		if obs.Sandbox != nil {
			attempt = obs.Sandbox.Attempt + 1
			acts = append(acts, action{Kind: actStopSandbox, ID: obs.Sandbox.ID}, action{Kind: actRemoveSandbox, ID: obs.Sandbox.ID})
		}
		return append(acts, action{Kind: actRunSandbox, Attempt: attempt}), time.Time{}
	}
	// Init containers run one at a time, in order, each to success,
	// before any of the others.
	for _, c := range pod.Spec.InitContainers {
		acts = append(acts, garbage(obs.Containers[c.Name])...)
	}
	always := func(int32) bool { return true }
	i, _ := initProgress(pod, obs)
	// Sidecars that have started keep running, whatever their exit.
	for j := range pod.Spec.InitContainers[:i] {
		if c := &pod.Spec.InitContainers[j]; podutil.IsSidecar(c) {
			a, n := planContainer(c, obs, now, gracePeriod(pod), always)
			acts, next = append(acts, a...), earliest(next, n)
		}
	}
	if i < len(pod.Spec.InitContainers) {
		c := &pod.Spec.InitContainers[i]
		restart := func(code int32) bool { return initRestarts(pod.Spec.RestartPolicy, code) }
		if podutil.IsSidecar(c) {
			restart = always
		}
		a, n := planContainer(c, obs, now, gracePeriod(pod), restart)
		return append(acts, a...), earliest(next, n)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		acts = append(acts, garbage(obs.Containers[c.Name])...)
		a, n := planContainer(c, obs, now, gracePeriod(pod), func(code int32) bool { return restarts(pod.Spec.RestartPolicy, code) })
		acts, next = append(acts, a...), earliest(next, n)
	}
	// Ephemeral containers (kubectl debug) start once and never again.
	never := func(int32) bool { return false }
	for i := range pod.Spec.EphemeralContainers {
		a, n := planContainer(podutil.Ephemeral(&pod.Spec.EphemeralContainers[i]), obs, now, gracePeriod(pod), never)
		acts, next = append(acts, a...), earliest(next, n)
	}
	acts = append(acts, planResize(pod, obs, acts)...)
	return acts, earliest(next, deadline)
}

// Upstream's reason and message for a pod past its activeDeadlineSeconds.
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// deadlineExceeded reports whether pod has been active longer than its
// activeDeadlineSeconds at now (counted from status.startTime), and
// otherwise when it will be (zero without a deadline).
func deadlineExceeded(pod *corev1.Pod, now time.Time) (bool, time.Time) {
	if pod.Spec.ActiveDeadlineSeconds == nil || pod.Status.StartTime == nil {
		return false, time.Time{}
	}
	at := pod.Status.StartTime.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)
	if !now.Before(at) {
		return true, time.Time{}
	}
	return false, at
}

// garbage are the runs of a container to remove: all but the newest and
// the one before it (its lastState).
func garbage(runs []runtime.Container) []action {
	var acts []action
	for _, r := range runs[min(len(runs), 2):] {
		acts = append(acts, action{Kind: actRemoveContainer, ID: r.ID})
	}
	return acts
}

// planContainer is what to do for one container of a ready sandbox, and
// when to look again: start it, start it afresh, or restart it (when
// restart says so of its exit code) once its back-off has passed.
func planContainer(c *corev1.Container, obs observed, now time.Time, grace int64, restart func(code int32) bool) (acts []action, next time.Time) {
	runs := obs.Containers[c.Name]
	if len(runs) == 0 {
		if obs.MissingImages[c.Image] {
			return nil, now.Add(imageRecheck)
		}
		return []action{{Kind: actStartContainer, Container: c.Name, Attempt: 0}}, time.Time{}
	}
	last := runs[0]
	switch last.State {
	case runtime.Running:
		if msg, ok := obs.Unhealthy[c.Name]; ok {
			// Its liveness or startup probe failed: stop it; it restarts
			// as its policy says.
			acts = append(acts, action{Kind: actStopContainer, ID: last.ID, Container: c.Name, Grace: probeGrace(c, grace), Message: msg})
		}
	case runtime.Created:
		// Created but never started (the agent stopped in between):
		// start afresh.
		acts = append(acts, action{Kind: actRemoveContainer, ID: last.ID},
			action{Kind: actStartContainer, Container: c.Name, Attempt: last.Attempt})
	default: // exited or unknown
		if !restart(last.ExitCode) {
			return nil, time.Time{}
		}
		at := last.FinishedAt.Add(restartDelay(last))
		switch {
		case now.Before(at):
			next = at
		case obs.MissingImages[c.Image]:
			next = now.Add(imageRecheck)
		default:
			acts = append(acts, action{Kind: actStartContainer, Container: c.Name, Attempt: last.Attempt + 1})
		}
	}
	return acts, next
}

// initRestarts reports whether an init container that exited with code
// runs again: after a failure, unless the pod's policy is Never.
func initRestarts(policy corev1.RestartPolicy, code int32) bool {
	return code != 0 && policy != corev1.RestartPolicyNever
}

// initProgress is the index of the first init container that has not
// completed (len(InitContainers) once all have, or once any of the
// other containers has run: the pod was initialized), and whether it
// failed for good, which fails the pod.
func initProgress(pod *corev1.Pod, obs observed) (next int, failed bool) {
	for _, c := range pod.Spec.Containers {
		if len(obs.Containers[c.Name]) > 0 {
			return len(pod.Spec.InitContainers), false
		}
	}
	for i, c := range pod.Spec.InitContainers {
		runs := obs.Containers[c.Name]
		if podutil.IsSidecar(&c) {
			// A sidecar lets the next one start once it has started (and
			// passed its startup probe, if it has one).
			passed := slices.ContainsFunc(pod.Spec.InitContainers[i+1:], func(n corev1.Container) bool { return len(obs.Containers[n.Name]) > 0 })
			started := slices.ContainsFunc(runs, func(r runtime.Container) bool { return !r.StartedAt.IsZero() })
			if c.StartupProbe != nil {
				started = len(runs) > 0 && runs[0].State == runtime.Running && obs.Started[c.Name]
			}
			if !started && !passed {
				return i, false
			}
			continue
		}
		if len(runs) == 0 || runs[0].State != runtime.Exited {
			return i, false
		}
		if runs[0].ExitCode != 0 {
			return i, !initRestarts(pod.Spec.RestartPolicy, runs[0].ExitCode)
		}
	}
	return len(pod.Spec.InitContainers), false
}

// ephemerals are pod's ephemeral containers, as Containers.
func ephemerals(pod *corev1.Pod) []corev1.Container {
	var out []corev1.Container
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, *podutil.Ephemeral(&pod.Spec.EphemeralContainers[i]))
	}
	return out
}

// imageRecheck is how often a pod waiting for a missing image looks again.
const imageRecheck = 10 * time.Second

// planDeletion stops everything of a pod marked for deletion, each
// container with the pod's grace period, sidecars only once the others
// have stopped (with what is left of the grace period, at least
// probes.MinStopGrace), then removes the sandbox and deletes the pod object.
func planDeletion(pod *corev1.Pod, obs observed, now time.Time) []action {
	var acts []action
	grace := gracePeriod(pod)
	live := func(r runtime.Container) bool {
		return r.State == runtime.Running || r.State == runtime.Created || r.State == runtime.Unknown
	}
	var sidecars []corev1.Container
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers, ephemerals(pod)) {
		if podutil.IsSidecar(&c) {
			sidecars = append(sidecars, c)
			continue
		}
		for _, r := range obs.Containers[c.Name] {
			if live(r) {
				acts = append(acts, action{Kind: actStopContainer, ID: r.ID, Container: c.Name, Grace: grace})
			}
		}
	}
	left := grace
	if pod.DeletionTimestamp != nil && grace > 0 {
		left = max(int64(pod.DeletionTimestamp.Sub(now).Seconds()), probes.MinStopGrace)
		left = min(left, grace)
	}
	var sideStops []action
	for _, c := range sidecars {
		for _, r := range obs.Containers[c.Name] {
			if live(r) {
				sideStops = append(sideStops, action{Kind: actStopContainer, ID: r.ID, Container: c.Name, Grace: left})
			}
		}
	}
	if len(acts) > 0 && len(sideStops) > 0 {
		return acts // the sidecars next, once these have stopped
	}
	acts = append(acts, sideStops...)
	for _, id := range append(slices.Clone(obs.Others), sandboxID(obs.Sandbox)...) {
		acts = append(acts, action{Kind: actStopSandbox, ID: id}, action{Kind: actRemoveSandbox, ID: id})
	}
	return append(acts, action{Kind: actDeletePod})
}

func sandboxID(sb *runtime.Sandbox) []string {
	if sb == nil {
		return nil
	}
	return []string{sb.ID}
}

// probeGrace is the grace period of a container stopped by a failed
// liveness or startup probe: the probe's own terminationGracePeriodSeconds
// when it sets one, else the pod's.
func probeGrace(c *corev1.Container, grace int64) int64 {
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.StartupProbe} {
		if p != nil && p.TerminationGracePeriodSeconds != nil {
			return *p.TerminationGracePeriodSeconds
		}
	}
	return grace
}

func gracePeriod(pod *corev1.Pod) int64 {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return defaultGrace
}

// allDone reports whether every container has run and exited for good
// under the restart policy.
func allDone(pod *corev1.Pod, obs observed) bool {
	if len(pod.Spec.Containers) == 0 {
		return false
	}
	for _, c := range pod.Spec.Containers {
		runs := obs.Containers[c.Name]
		if len(runs) == 0 || runs[0].State != runtime.Exited || restarts(pod.Spec.RestartPolicy, runs[0].ExitCode) {
			return false
		}
	}
	return true
}

// overdue reports whether pod is past its activeDeadlineSeconds at now.
func overdue(pod *corev1.Pod, now time.Time) bool {
	ok, _ := deadlineExceeded(pod, now)
	return ok
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Runtime name prefixes of container IDs in pod status.
const idScheme = "containerd://"

// nodeEnv is what status needs of the node.
type nodeEnv struct {
	HostIP string
}

// podStatus is the status of pod given what the runtime shows at now. It
// starts from the pod's current status so that fields others own (the
// PodScheduled condition, QoS class, nominated node) are kept, and
// transition times stay when nothing changed.
func podStatus(pod *corev1.Pod, obs observed, env nodeEnv, now time.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	st.ObservedGeneration = pod.Generation
	if st.StartTime == nil {
		t := podstatus.Stamp(now)
		st.StartTime = &t
	}
	if env.HostIP != "" {
		st.HostIP = env.HostIP
		st.HostIPs = []corev1.HostIP{{IP: env.HostIP}}
	}
	switch {
	case pod.Spec.HostNetwork && env.HostIP != "":
		st.PodIP, st.PodIPs = env.HostIP, []corev1.PodIP{{IP: env.HostIP}}
	case obs.Sandbox != nil && obs.Sandbox.IP != "":
		st.PodIP, st.PodIPs = obs.Sandbox.IP, []corev1.PodIP{{IP: obs.Sandbox.IP}}
	}

	prev := map[string]corev1.ContainerStatus{}
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses) {
		prev[cs.Name] = cs
	}
	next, initFailed := initProgress(pod, obs)
	initialized := next == len(pod.Spec.InitContainers)
	// Containers that have not run yet wait for the init containers.
	initializing := func(c *corev1.Container, cs *corev1.ContainerStatus) {
		if w := cs.State.Waiting; w != nil && w.Reason == "ContainerCreating" && len(obs.Containers[c.Name]) == 0 {
			w.Reason = "PodInitializing"
		}
	}
	st.InitContainerStatuses = nil
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		restart := func(code int32) bool { return initRestarts(pod.Spec.RestartPolicy, code) }
		if podutil.IsSidecar(c) {
			// Restarted whatever its exit, until the pod is done.
			restart = func(int32) bool { return !terminal(pod.Status.Phase) && !allDone(pod, obs) }
		}
		cs := containerStatus(pod, c, obs, prev[c.Name], now, restart)
		initializing(c, &cs)
		// An init container is ready once it has completed, a sidecar
		// while it runs, has started and passes its readiness probe.
		if !podutil.IsSidecar(c) {
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	st.ContainerStatuses = nil
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := containerStatus(pod, c, obs, prev[c.Name], now, func(code int32) bool { return restarts(pod.Spec.RestartPolicy, code) })
		if !initialized {
			initializing(c, &cs)
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	st.EphemeralContainerStatuses = nil
	for _, c := range ephemerals(pod) {
		st.EphemeralContainerStatuses = append(st.EphemeralContainerStatuses, containerStatus(pod, &c, obs, prev[c.Name], now, func(int32) bool { return false }))
	}

	if st.QOSClass == "" {
		st.QOSClass = podspec.ComputePodQOS(pod)
	}
	if !terminal(pod.Status.Phase) {
		switch {
		case overdue(pod, now):
			st.Phase, st.Reason, st.Message = corev1.PodFailed, reasonDeadlineExceeded, messageDeadlineExceeded
		case initFailed:
			st.Phase = corev1.PodFailed
		case !initialized:
			st.Phase = corev1.PodPending
		default:
			st.Phase = phase(pod, st.ContainerStatuses)
		}
	}
	setConditions(pod, &st, obs, now)
	setResizeStatus(pod, &st, obs, now)
	return st
}

// containerStatus is the status of c; restart says whether it runs
// again after exiting with a code.
func containerStatus(pod *corev1.Pod, c *corev1.Container, obs observed, prev corev1.ContainerStatus, now time.Time, restart func(code int32) bool) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: new(bool)}
	runs := obs.Containers[c.Name]
	if len(runs) == 0 {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		if w, ok := obs.StartErrors[c.Name]; ok {
			cs.State.Waiting = &w
		}
		if obs.MissingImages[c.Image] {
			cs.State.Waiting = missingImage(c, prev)
		}
		return cs
	}
	last := runs[0]
	cs.RestartCount = int32(last.Attempt)
	cs.ImageID = last.ImageRef
	cs.ContainerID = idScheme + last.ID
	if len(runs) > 1 && runs[1].State == runtime.Exited {
		cs.LastTerminationState.Terminated = terminated(runs[1])
	}
	if w, ok := obs.StartErrors[c.Name]; ok && last.State != runtime.Running {
		// This sync's attempt to start it failed (RunContainerError,
		// PostStartHookError): say so until the next sync.
		cs.State.Waiting = &w
		if last.State == runtime.Exited {
			cs.LastTerminationState.Terminated = terminated(last)
		}
		return cs
	}
	switch last.State {
	case runtime.Running:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: podstatus.Stamp(last.StartedAt)}
		// Started once its startup probe (if any) has succeeded; ready
		// once started and its readiness probe (if any) succeeds.
		*cs.Started = c.StartupProbe == nil || obs.Started[c.Name]
		cs.Ready = *cs.Started && (c.ReadinessProbe == nil || obs.Ready[c.Name])
	case runtime.Created:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	default:
		t := terminated(last)
		if pod.DeletionTimestamp == nil && restart(last.ExitCode) {
			if wait := last.FinishedAt.Add(restartDelay(last)).Sub(now); wait > 0 {
				cs.LastTerminationState.Terminated = t
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
					Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
						restartDelay(last), c.Name, pod.Name, pod.Namespace, pod.UID)}
				if obs.MissingImages[c.Image] {
					cs.State.Waiting = missingImage(c, prev)
				}
				return cs
			}
		}
		cs.State.Terminated = t
	}
	return cs
}

// missingImage is the waiting state of a container whose image the node
// does not have. plainkube nodes pull nothing, so whatever the pull policy
// the image has to be imported (plainkube image load).
func missingImage(c *corev1.Container, prev corev1.ContainerStatus) *corev1.ContainerStateWaiting {
	msg := fmt.Sprintf("image %q is not present on the node, and plainkube nodes do not pull images: import it with `plainkube image load`", c.Image)
	switch {
	case c.ImagePullPolicy == corev1.PullNever:
		return &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull",
			Message: fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)}
	case prev.State.Waiting != nil && (prev.State.Waiting.Reason == "ErrImagePull" || prev.State.Waiting.Reason == "ImagePullBackOff"):
		return &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image: " + msg}
	default:
		return &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: msg}
	}
}

func terminated(r runtime.Container) *corev1.ContainerStateTerminated {
	reason := r.Reason
	if reason == "" {
		reason = "Error"
		if r.ExitCode == 0 {
			reason = "Completed"
		}
	}
	return &corev1.ContainerStateTerminated{
		ExitCode: r.ExitCode, Reason: reason, Message: r.Message,
		StartedAt: podstatus.Stamp(r.StartedAt), FinishedAt: podstatus.Stamp(r.FinishedAt),
		ContainerID: idScheme + r.ID,
	}
}

// phase is upstream's phase rule: Pending while a container has not yet
// run, Running while one runs or will restart, then Succeeded or Failed.
func phase(pod *corev1.Pod, statuses []corev1.ContainerStatus) corev1.PodPhase {
	return podstatus.Phase(pod, statuses)
}

func setConditions(pod *corev1.Pod, st *corev1.PodStatus, obs observed, now time.Time) {
	set := func(c corev1.PodCondition) {
		c.ObservedGeneration = pod.Generation
		podstatus.SetCondition(st, c, now)
	}
	boolCond := func(b bool) corev1.ConditionStatus {
		if b {
			return corev1.ConditionTrue
		}
		return corev1.ConditionFalse
	}
	done := terminal(st.Phase)
	set(corev1.PodCondition{Type: corev1.PodReadyToStartContainers,
		Status: boolCond(!done && obs.Sandbox != nil && obs.Sandbox.Ready)})
	initialized := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	if next, _ := initProgress(pod, obs); next < len(pod.Spec.InitContainers) {
		var incomplete []string
		for _, cs := range st.InitContainerStatuses {
			if !cs.Ready {
				incomplete = append(incomplete, cs.Name)
			}
		}
		initialized = corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized",
			Message: fmt.Sprintf("containers with incomplete status: %v", incomplete)}
	}
	set(initialized)
	var unready []string
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	ready := corev1.PodCondition{Status: corev1.ConditionTrue}
	switch {
	case done:
		ready = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "PodCompleted"}
	case len(unready) > 0:
		ready = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
			Message: fmt.Sprintf("containers with unready status: %v", unready)}
	}
	ready.Type = corev1.ContainersReady
	set(ready)
	if ready.Status == corev1.ConditionTrue {
		for _, g := range pod.Spec.ReadinessGates {
			i := slices.IndexFunc(st.Conditions, func(c corev1.PodCondition) bool { return c.Type == g.ConditionType })
			if i < 0 || st.Conditions[i].Status != corev1.ConditionTrue {
				ready = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady",
					Message: fmt.Sprintf("the status of pod readiness gate %q is not \"True\"", g.ConditionType)}
				break
			}
		}
	}
	ready.Type = corev1.PodReady
	set(ready)
}
