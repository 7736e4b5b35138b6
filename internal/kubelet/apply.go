package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/kubelet/env"
	"plainkube.dev/plainkube/internal/kubelet/events"
	"plainkube.dev/plainkube/internal/kubelet/network"
	"plainkube.dev/plainkube/internal/kubelet/static"
	"plainkube.dev/plainkube/internal/kubelet/volumes"

	"plainkube.dev/plainkube/internal/kubelet/runtime"
)

// observe reads what the runtime has of pod.
func (a *Agent) observe(ctx context.Context, pod *corev1.Pod) (observed, error) {
	p, err := a.cri.Observe(ctx, pod)
	if err != nil {
		return observed{Pod: p}, err
	}
	return observed{Pod: p, Applied: a.resize.appliedTo(pod, p)}, nil
}

// isRunning reports whether container id runs, as obs shows: only a
// running container gets its preStop hook.
func isRunning(obs observed, id string) bool {
	for _, runs := range obs.Containers {
		for _, r := range runs {
			if r.ID == id {
				return r.State == runtime.Running
			}
		}
	}
	return false
}

// apply carries out acts in order, except that container stops run
// together (each may take its whole grace period, preStop hook included).
func (a *Agent) apply(ctx context.Context, pod *corev1.Pod, obs observed, acts []action) error {
	var stops []action
	for _, act := range acts {
		if act.Kind == actStopContainer {
			stops = append(stops, act)
		}
	}
	if len(stops) > 0 {
		var wg sync.WaitGroup
		errs := make([]error, len(stops))
		for i, act := range stops {
			wg.Go(func() { errs[i] = a.killContainer(ctx, pod, act, a.podIP(pod, obs), isRunning(obs, act.ID)) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	var sandboxCfg *runtimeapi.PodSandboxConfig
	for _, act := range acts {
		var err error
		switch act.Kind {
		case actStopContainer:
			continue
		case actRunSandbox:
			sandboxCfg = a.sandboxConfig(pod, act.Attempt)
			if err = os.MkdirAll(sandboxCfg.LogDirectory, 0o755); err == nil {
				_, err = a.cri.RunPodSandbox(ctx, sandboxCfg, "")
			}
			if err != nil {
				a.events.Record(pod, "", corev1.EventTypeWarning, events.FailedCreatePodSandBox, "Failed to create pod sandbox: %v", err)
			} else if _, fellBack := a.podDNS(pod); fellBack && !pod.Spec.HostNetwork {
				a.events.Record(pod, "", corev1.EventTypeWarning, events.MissingClusterDNS,
					"pod: %q. kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
					events.PodDesc(pod), corev1.DNSClusterFirst, corev1.DNSDefault)
			}
		case actStartContainer:
			err = a.startContainer(ctx, pod, act)
		case actRemoveContainer:
			err = a.cri.RemoveContainer(ctx, act.ID)
		case actResizeContainer:
			err = a.resizeContainer(ctx, pod, act)
		case actStopSandbox:
			err = a.cri.StopPodSandbox(ctx, act.ID)
		case actRemoveSandbox:
			err = a.cri.RemovePodSandbox(ctx, act.ID)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", act, err)
		}
		a.log.Debug("pod action", "pod", pod.Namespace+"/"+pod.Name, "action", act.String())
	}
	return nil
}

// logDir is where a pod's container logs go, as upstream lays them out.
func (a *Agent) logDir(pod *corev1.Pod) string {
	return filepath.Join(a.opts.DataDir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// sandboxConfig is the CRI configuration of pod's sandbox at attempt on
// this node.
func (a *Agent) sandboxConfig(pod *corev1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	hostname, _ := network.Hostname(pod, a.opts.ClusterDomain)
	if pod.Spec.HostNetwork {
		hostname = ""
	}
	dns, _ := a.podDNS(pod)
	return runtime.SandboxConfig(pod, attempt, hostname, dns.CRI(), a.logDir(pod))
}

// podDNS is pod's resolver configuration on this node.
func (a *Agent) podDNS(pod *corev1.Pod) (network.ResolvConf, bool) {
	return network.PodDNS(pod, a.opts.ClusterDNS, a.opts.ClusterDomain, a.hostDNS)
}

// podIP is the address of pod: its sandbox's, or the node's on the host
// network.
func (a *Agent) podIP(pod *corev1.Pod, obs observed) string {
	if !pod.Spec.HostNetwork && obs.Sandbox != nil && obs.Sandbox.IP != "" {
		return obs.Sandbox.IP
	}
	return a.host.ip
}

// startError is why a container could not be created: Reason is the
// waiting reason its status shows.
type startError struct {
	Container, Reason string
	Err               error
}

func (e *startError) Error() string { return "container " + e.Container + ": " + e.Err.Error() }
func (e *startError) Unwrap() error { return e.Err }

func (a *Agent) startContainer(ctx context.Context, pod *corev1.Pod, act action) error {
	c := podutil.Container(pod, act.Container)
	if c == nil {
		return fmt.Errorf("no container %q in the pod spec", act.Container)
	}
	obs, err := a.observe(ctx, pod)
	if err != nil {
		return err
	}
	if obs.Sandbox == nil || !obs.Sandbox.Ready {
		return errors.New("pod sandbox is not ready")
	}
	user, present, err := a.cri.ImageUser(ctx, c.Image)
	if err != nil {
		return err
	}
	if !present {
		return &startError{c.Name, "ErrImagePull", fmt.Errorf("image %q is not present on the node", c.Image)}
	}
	if err := runtime.VerifyNonRoot(pod, c, user); err != nil {
		return &startError{c.Name, "CreateContainerConfigError", err}
	}
	// The sandbox config must be the one the sandbox was made with.
	sbCfg := a.sandboxConfig(pod, obs.Sandbox.Attempt)
	if err := os.MkdirAll(filepath.Join(sbCfg.LogDirectory, c.Name), 0o755); err != nil {
		return err
	}
	vars, err := a.containerEnv(ctx, pod, c, obs)
	if err != nil {
		return &startError{c.Name, "CreateContainerConfigError", err}
	}
	vols, err := a.vols.Setup(ctx, pod)
	if err != nil {
		return &startError{c.Name, "CreateContainerConfigError", err}
	}
	mounts, err := volumes.ContainerMounts(pod, c, vols, vars)
	if err != nil {
		return &startError{c.Name, "CreateContainerConfigError", err}
	}
	for _, m := range mounts {
		if _, err := os.Stat(m.HostPath); errors.Is(err, os.ErrNotExist) {
			// A subPath that does not exist yet is made a directory.
			if err := os.MkdirAll(m.HostPath, 0o777); err != nil {
				return err
			}
		}
	}
	mounts, err = a.podFileMounts(pod, c, act.Attempt, obs, mounts)
	if err != nil {
		return err
	}
	cfg := runtime.ContainerConfig(pod, c, act.Attempt, vars, mounts, a.host.memory.Value())
	target, err := pidTarget(pod, c.Name, obs)
	if err != nil {
		return &startError{c.Name, "CreateContainerConfigError", err}
	}
	if ns := cfg.Linux.SecurityContext.NamespaceOptions; target != "" && ns.Pid == runtimeapi.NamespaceMode_CONTAINER {
		ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, target
	}
	a.events.Record(pod, c.Name, corev1.EventTypeNormal, events.Pulled, "Container image %q already present on machine", c.Image)
	id, err := a.cri.CreateContainer(ctx, obs.Sandbox.ID, cfg, sbCfg)
	if err != nil {
		return &startError{c.Name, "CreateContainerError", runtime.ErrorMessage(err)}
	}
	a.resize.ran(pod.UID, id, c.Resources)
	a.events.Record(pod, c.Name, corev1.EventTypeNormal, events.Created, "Created container: %s", c.Name)
	a.log.Info("starting container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "id", runtime.ShortID(id), "attempt", act.Attempt)
	if err := a.cri.StartContainer(ctx, id); err != nil {
		return &startError{c.Name, "RunContainerError", runtime.ErrorMessage(err)}
	}
	a.events.Record(pod, c.Name, corev1.EventTypeNormal, events.Started, "Started container %s", c.Name)
	podIP := a.podIP(pod, obs)
	if err := a.probes.PostStart(ctx, pod, c, id, podIP); err != nil {
		a.killContainer(ctx, pod, action{Kind: actStopContainer, ID: id, Container: c.Name, Grace: gracePeriod(pod),
			Message: events.FailedPostStartHook}, podIP, false)
		return &startError{c.Name, "PostStartHookError", err}
	}
	return nil
}

// resizeContainer updates the cgroup resources of a running container to
// its spec's (the allocated resources), as upstream's kubelet does through
// the CRI's UpdateContainerResources.
func (a *Agent) resizeContainer(ctx context.Context, pod *corev1.Pod, act action) error {
	c := podutil.Container(pod, act.Container)
	if c == nil {
		return fmt.Errorf("no container %q in the pod spec", act.Container)
	}
	res := runtime.ContainerConfig(pod, c, 0, nil, nil, a.host.memory.Value()).Linux.Resources
	if err := a.cri.UpdateContainerResources(ctx, act.ID, &runtimeapi.ContainerResources{Linux: res}); err != nil {
		return err
	}
	a.resize.ran(pod.UID, act.ID, c.Resources)
	a.log.Info("resized container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "id", runtime.ShortID(act.ID))
	return nil
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
	if preStop && c != nil {
		grace = a.probes.PreStop(ctx, pod, c, act.ID, podIP, grace)
	}
	a.log.Info("stopping container", "pod", pod.Namespace+"/"+pod.Name, "container", act.Container, "id", runtime.ShortID(act.ID), "grace", grace)
	return a.cri.StopContainer(ctx, act.ID, grace)
}

// podFileMounts adds to mounts the files the agent provides a container:
// its termination message file and, off the host network, the pod's
// /etc/hosts (unless the container mounts something there itself).
func (a *Agent) podFileMounts(pod *corev1.Pod, c *corev1.Container, attempt uint32, obs observed, mounts []*runtimeapi.Mount) ([]*runtimeapi.Mount, error) {
	has := func(p string) bool {
		return slices.ContainsFunc(mounts, func(m *runtimeapi.Mount) bool { return m.ContainerPath == p })
	}
	termPath := runtime.TerminationPath(c)
	if !has(termPath) {
		p, err := a.terminationFile(pod, c, attempt)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, &runtimeapi.Mount{HostPath: p, ContainerPath: termPath})
	}
	if !pod.Spec.HostNetwork && !has("/etc/hosts") {
		p, err := a.writeHostsFile(pod, a.podIP(pod, obs))
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, &runtimeapi.Mount{HostPath: p, ContainerPath: "/etc/hosts"})
	}
	return mounts, nil
}

// containerEnv reads the ConfigMaps and Secrets c's environment refers
// to and resolves it.
func (a *Agent) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container, obs observed) ([]env.Var, error) {
	src := env.Source{ConfigMaps: map[string]*corev1.ConfigMap{}, Secrets: map[string]*corev1.Secret{},
		HostIPs: []string{a.host.ip}, Allocatable: a.allocatable()}
	switch {
	case pod.Spec.HostNetwork:
		src.PodIPs = []string{a.host.ip}
	case obs.Sandbox != nil && obs.Sandbox.IP != "":
		src.PodIPs = []string{obs.Sandbox.IP}
	}
	var err error
	if src.Services, err = a.serviceEnvFor(pod); err != nil {
		return nil, err
	}
	cms, secrets := env.Refs(c)
	for _, name := range cms {
		cm, err := a.cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if err == nil {
			src.ConfigMaps[name] = cm
		}
	}
	for _, name := range secrets {
		s, err := a.cs.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if err == nil {
			src.Secrets[name] = s
		}
	}
	return env.Resolve(pod, c, src)
}

// removeOrphans stops and removes the sandboxes, volumes and files of
// pods no longer bound to this node (deleted without a graceful stop, or
// rebound elsewhere).
func (a *Agent) removeOrphans(ctx context.Context, live map[types.UID]bool) {
	if err := a.cri.RemoveOrphans(ctx, live); err != nil {
		return
	}
	a.vols.CleanupOrphans(live)
	a.removeOrphanPodFiles(live)
}

// serviceEnvFor reads, from the agent's cache, the Services whose
// variables pod's containers get (serviceEnv). A static pod does not wait
// for them, as upstream: until the agent has read them it gets none.
func (a *Agent) serviceEnvFor(pod *corev1.Pod) (map[string]string, error) {
	if !a.apiSynced.Load() {
		if pod.Annotations[static.AnnotationConfigSource] == "file" {
			return map[string]string{}, nil
		}
		return nil, fmt.Errorf("services have not yet been read at least once, cannot construct envvars")
	}
	var services []*corev1.Service
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	if links {
		list, err := a.services.Services(pod.Namespace).List(labels.Everything())
		if err != nil {
			return nil, fmt.Errorf("failed to list services when setting up env vars: %w", err)
		}
		services = append(services, list...)
	}
	if !links || pod.Namespace != metav1.NamespaceDefault {
		svc, err := a.services.Services(metav1.NamespaceDefault).Get("kubernetes")
		switch {
		case err == nil:
			services = append(services, svc)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("failed to list services when setting up env vars: %w", err)
		}
	}
	return env.ServiceVars(services, pod.Namespace, pod.Spec.EnableServiceLinks), nil
}

// pidTarget is the ID of the running container whose process namespace
// ephemeral container name joins (its targetContainerName, as kubectl
// debug --target sets it), "" for none; an error if that container is
// not running.
func pidTarget(pod *corev1.Pod, name string, obs observed) (string, error) {
	for _, ec := range pod.Spec.EphemeralContainers {
		if ec.Name != name || ec.TargetContainerName == "" {
			continue
		}
		runs := obs.Containers[ec.TargetContainerName]
		if len(runs) == 0 || runs[0].State != runtime.Running {
			return "", fmt.Errorf("the target container %q is not running", ec.TargetContainerName)
		}
		return runs[0].ID, nil
	}
	return "", nil
}
