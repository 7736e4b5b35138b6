package kubelet

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/kubelet/events"
)

// Lifecycle hooks. A container's postStart hook runs right after the
// runtime starts it, and the container counts as started only once the
// hook has finished; a failed hook (event FailedPostStartHook) kills the
// container, which then restarts as its policy says. A preStop hook runs
// before the container is sent SIGTERM, within the grace period: what the
// hook used of it is taken off the grace given to the stop, which is never
// less than minStopGrace. Handlers: exec (in the container), httpGet
// (against the pod's IP unless a host is given) and sleep.

// minStopGrace is the least grace a container gets after its preStop
// hook, so that it can still shut down cleanly (upstream's 2s).
const minStopGrace = 2

// runHook runs handler h of container c (runtime ID id) of pod within
// ctx. On failure it returns the message the hook events show.
func (a *Agent) runHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, h *corev1.LifecycleHandler) error {
	switch {
	case h.Exec != nil:
		timeout := time.Duration(0)
		if dl, ok := ctx.Deadline(); ok {
			timeout = max(time.Until(dl), time.Second)
		}
		stdout, stderr, err := a.rt.Runtime.ExecSync(ctx, id, h.Exec.Command, timeout)
		if err != nil {
			return fmt.Errorf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, podDesc(pod), err, string(stdout)+string(stderr))
		}
		return nil
	case h.HTTPGet != nil:
		if err := hookHTTPGet(ctx, pod, h.HTTPGet, podIP); err != nil {
			return fmt.Errorf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podDesc(pod), err)
		}
		return nil
	case h.Sleep != nil:
		t := time.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	}
	return fmt.Errorf("lifecycle hook for Container %q in Pod %q has no handler", c.Name, podDesc(pod))
}

// hookHTTPGet sends a hook's GET; any response counts as done.
func hookHTTPGet(ctx context.Context, pod *corev1.Pod, g *corev1.HTTPGetAction, podIP string) error {
	req, err := httpGetRequest(ctx, pod, g, podIP, "")
	if err != nil {
		return err
	}
	resp, err := probeClient(0).Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	return resp.Body.Close()
}

// postStart runs c's postStart hook, if it has one; on failure it
// records FailedPostStartHook, kills the container and returns a start
// error (PostStartHookError).
func (a *Agent) postStart(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	err := a.runHook(ctx, pod, c, id, podIP, c.Lifecycle.PostStart)
	if err == nil {
		return nil
	}
	// As upstream, the event does not carry the hook's output (it may
	// hold secrets); the container's waiting message does.
	a.events.Record(pod, c.Name, corev1.EventTypeWarning, events.FailedPostStartHook, "PostStartHook failed")
	a.log.Info("postStart hook failed: killing the container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
	a.killContainer(ctx, pod, action{Kind: actStopContainer, ID: id, Container: c.Name, Grace: gracePeriod(pod),
		Message: events.FailedPostStartHook}, podIP, false)
	return &startError{c.Name, "PostStartHookError", err}
}

// killContainer stops a container: its preStop hook first (when preStop
// is set and the container has one), then SIGTERM and, after what is
// left of the grace period, SIGKILL. It records a Killing event.
func (a *Agent) killContainer(ctx context.Context, pod *corev1.Pod, act action, podIP string, preStop bool) error {
	c := podutil.Container(pod, act.Container)
	msg := act.Message
	if msg == "" && c != nil {
		msg = "Stopping container " + c.Name
	}
	if c != nil {
		a.events.Record(pod, c.Name, corev1.EventTypeNormal, events.Killing, "%s", msg)
	}
	grace := act.Grace
	if preStop && c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
		start := time.Now()
		hctx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second)
		err := a.runHook(hctx, pod, c, act.ID, podIP, c.Lifecycle.PreStop)
		cancel()
		if err != nil {
			a.events.Record(pod, c.Name, corev1.EventTypeWarning, events.FailedPreStopHook, "%s", err.Error())
			a.log.Info("preStop hook failed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
		}
		grace -= int64(time.Since(start).Seconds())
		grace = max(grace, minStopGrace)
	}
	a.log.Info("stopping container", "pod", pod.Namespace+"/"+pod.Name, "container", act.Container, "id", shortID(act.ID), "grace", grace)
	return a.rt.Runtime.StopContainer(ctx, act.ID, grace)
}
