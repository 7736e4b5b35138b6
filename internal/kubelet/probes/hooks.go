package probes

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"plainkube.dev/plainkube/internal/kubelet/events"
)

// MinStopGrace is the least grace a container gets after its preStop
// hook, so that it can still shut down cleanly (upstream's 2s).
const MinStopGrace = 2

// runHook runs handler h of container c (runtime ID id) of pod within
// ctx. On failure it returns the message the hook events show.
func (r *Runner) runHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, h *corev1.LifecycleHandler) error {
	switch {
	case h.Exec != nil:
		timeout := time.Duration(0)
		if dl, ok := ctx.Deadline(); ok {
			timeout = max(time.Until(dl), time.Second)
		}
		stdout, stderr, err := r.exec.ExecSync(ctx, id, h.Exec.Command, timeout)
		if err != nil {
			return fmt.Errorf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, events.PodDesc(pod), err, string(stdout)+string(stderr))
		}
		return nil
	case h.HTTPGet != nil:
		if err := hookHTTPGet(ctx, pod, h.HTTPGet, podIP); err != nil {
			return fmt.Errorf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, events.PodDesc(pod), err)
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
	return fmt.Errorf("lifecycle hook for Container %q in Pod %q has no handler", c.Name, events.PodDesc(pod))
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

// PostStart runs c's postStart hook, if it has one. On failure it
// records FailedPostStartHook and returns the error, which the container's
// waiting message shows; the caller kills the container.
func (r *Runner) PostStart(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	err := r.runHook(ctx, pod, c, id, podIP, c.Lifecycle.PostStart)
	if err == nil {
		return nil
	}
	// As upstream, the event does not carry the hook's output (it may
	// hold secrets); the container's waiting message does.
	r.events.Record(pod, c.Name, corev1.EventTypeWarning, events.FailedPostStartHook, "PostStartHook failed")
	r.log.Info("postStart hook failed: killing the container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
	return err
}

// PreStop runs c's preStop hook (container id), if it has one and grace
// is positive, within grace seconds, and returns the grace left for the
// stop: what the hook did not use, at least MinStopGrace. A failed hook
// records FailedPreStopHook.
func (r *Runner) PreStop(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, grace int64) int64 {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || grace <= 0 {
		return grace
	}
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second)
	err := r.runHook(hctx, pod, c, id, podIP, c.Lifecycle.PreStop)
	cancel()
	if err != nil {
		r.events.Record(pod, c.Name, corev1.EventTypeWarning, events.FailedPreStopHook, "%s", err.Error())
		r.log.Info("preStop hook failed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
	}
	grace -= int64(time.Since(start).Seconds())
	return max(grace, MinStopGrace)
}
