package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	grpcstatus "google.golang.org/grpc/status"
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
)

// Labels the agent puts on sandboxes and containers (upstream's names, so
// crictl output reads the same).
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

func podLabels(pod *corev1.Pod) map[string]string {
	return map[string]string{labelPodName: pod.Name, labelPodNamespace: pod.Namespace, labelPodUID: string(pod.UID)}
}

// observe reads what the runtime has of pod.
func (a *Agent) observe(ctx context.Context, pod *corev1.Pod) (observed, error) {
	rt := a.rt.Runtime
	obs := observed{Containers: map[string][]containerRun{}, MissingImages: map[string]bool{}}
	sel := map[string]string{labelPodUID: string(pod.UID)}
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return obs, err
	}
	sort.Slice(sbs, func(i, j int) bool {
		if sbs[i].Metadata.Attempt != sbs[j].Metadata.Attempt {
			return sbs[i].Metadata.Attempt > sbs[j].Metadata.Attempt
		}
		return sbs[i].CreatedAt > sbs[j].CreatedAt
	})
	for i, sb := range sbs {
		if i > 0 {
			obs.Others = append(obs.Others, sb.Id)
			continue
		}
		s := &sandbox{ID: sb.Id, Attempt: sb.Metadata.Attempt, Ready: sb.State == runtimeapi.PodSandboxState_SANDBOX_READY}
		if s.Ready && !pod.Spec.HostNetwork {
			if st, err := rt.PodSandboxStatus(ctx, sb.Id, false); err == nil && st.Status.GetNetwork() != nil {
				s.IP = st.Status.Network.Ip
			}
		}
		obs.Sandbox = s
	}
	if obs.Sandbox != nil {
		cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: obs.Sandbox.ID, LabelSelector: sel})
		if err != nil {
			return obs, err
		}
		for _, c := range cs {
			st, err := rt.ContainerStatus(ctx, c.Id, false)
			if err != nil || st.Status == nil {
				continue // removed meanwhile
			}
			s := st.Status
			run := containerRun{
				ID: c.Id, Name: c.Metadata.Name, Attempt: c.Metadata.Attempt,
				ExitCode: s.ExitCode, Reason: s.Reason, Message: s.Message,
				CreatedAt: unixNano(s.CreatedAt), StartedAt: unixNano(s.StartedAt), FinishedAt: unixNano(s.FinishedAt),
				ImageRef: s.ImageRef,
			}
			if s.ImageId != "" {
				// Newer runtimes say the image's ID apart from the
				// reference; upstream reports it when there.
				run.ImageRef = s.ImageId
			}
			switch s.State {
			case runtimeapi.ContainerState_CONTAINER_CREATED:
				run.State = stateCreated
			case runtimeapi.ContainerState_CONTAINER_RUNNING:
				run.State = stateRunning
			case runtimeapi.ContainerState_CONTAINER_EXITED:
				run.State = stateExited
				run.Message = a.exitMessage(pod.UID, s)
			default:
				run.State = stateUnknown
			}
			obs.Containers[run.Name] = append(obs.Containers[run.Name], run)
		}
		for _, runs := range obs.Containers {
			sort.Slice(runs, func(i, j int) bool { return runs[i].Attempt > runs[j].Attempt })
		}
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		st, err := a.rt.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.Image}, false)
		if err != nil {
			return obs, err
		}
		if st.Image == nil {
			obs.MissingImages[c.Image] = true
		}
	}
	return obs, nil
}

// exitMessage is the message of an exited container's status: the
// runtime's, followed by the termination message the container left.
func (a *Agent) exitMessage(uid types.UID, st *runtimeapi.ContainerStatus) string {
	msg, ok := a.termMessages.get(uid, st.Id)
	if !ok {
		msg = terminationMessage(st)
		a.termMessages.put(uid, st.Id, msg)
	}
	switch {
	case msg == "":
		return st.Message
	case st.Message == "":
		return msg
	}
	return st.Message + ": " + msg
}

// runtimeMessage is err as upstream shows a runtime's error: the gRPC
// status's message, without the "rpc error: code = … desc =" prefix.
func runtimeMessage(err error) error {
	if st, ok := grpcstatus.FromError(err); ok {
		return errors.New(st.Message())
	}
	return err
}

// isRunning reports whether container id runs, as obs shows: only a
// running container gets its preStop hook.
func isRunning(obs observed, id string) bool {
	for _, runs := range obs.Containers {
		for _, r := range runs {
			if r.ID == id {
				return r.State == stateRunning
			}
		}
	}
	return false
}

func unixNano(n int64) time.Time {
	if n <= 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// apply carries out acts in order, except that container stops run
// together (each may take its whole grace period, preStop hook included).
func (a *Agent) apply(ctx context.Context, pod *corev1.Pod, obs observed, acts []action) error {
	rt := a.rt.Runtime
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
				_, err = rt.RunPodSandbox(ctx, sandboxCfg, "")
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
			err = rt.RemoveContainer(ctx, act.ID)
		case actStopSandbox:
			err = rt.StopPodSandbox(ctx, act.ID)
		case actRemoveSandbox:
			err = rt.RemovePodSandbox(ctx, act.ID)
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

func namespaces(pod *corev1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostPID {
		ns.Pid = runtimeapi.NamespaceMode_NODE
	} else if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

func (a *Agent) sandboxConfig(pod *corev1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	hostname, _ := network.Hostname(pod, a.opts.ClusterDomain)
	if pod.Spec.HostNetwork {
		hostname = ""
	}
	dns, _ := a.podDNS(pod)
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Hostname:     hostname,
		LogDirectory: a.logDir(pod),
		DnsConfig:    dns.CRI(),
		Labels:       podLabels(pod),
		Annotations:  pod.Annotations,
		PortMappings: portMappings(pod),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: sandboxSecurity(pod),
		},
	}
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

// portMappings are the pod's hostPorts, for the CNI portmap plugin (a
// hostNetwork pod listens on the host itself).
func portMappings(pod *corev1.Pod) []*runtimeapi.PortMapping {
	if pod.Spec.HostNetwork {
		return nil
	}
	var pms []*runtimeapi.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			proto := runtimeapi.Protocol_TCP
			switch p.Protocol {
			case corev1.ProtocolUDP:
				proto = runtimeapi.Protocol_UDP
			case corev1.ProtocolSCTP:
				proto = runtimeapi.Protocol_SCTP
			}
			pms = append(pms, &runtimeapi.PortMapping{Protocol: proto, ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP})
		}
	}
	return pms
}

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
	img, err := a.rt.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.Image}, false)
	if err != nil {
		return err
	}
	if img.Image == nil {
		return &startError{c.Name, "ErrImagePull", fmt.Errorf("image %q is not present on the node", c.Image)}
	}
	user := imageUser{Name: img.Image.Username}
	if img.Image.Uid != nil {
		user.UID = &img.Image.Uid.Value
	}
	if err := verifyNonRoot(pod, c, user); err != nil {
		return &startError{c.Name, "CreateContainerConfigError", err}
	}
	// The sandbox config must be the one the sandbox was made with.
	sbCfg := a.sandboxConfig(pod, obs.Sandbox.Attempt)
	if err := os.MkdirAll(filepath.Join(sbCfg.LogDirectory, c.Name), 0o755); err != nil {
		return err
	}
	labels := podLabels(pod)
	labels[labelContainerName] = c.Name
	vars, err := a.containerEnv(ctx, pod, c, obs)
	if err != nil {
		return &startError{c.Name, "CreateContainerConfigError", err}
	}
	var envs []*runtimeapi.KeyValue
	for _, e := range vars {
		envs = append(envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
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
	termPath := c.TerminationMessagePath
	if termPath == "" {
		termPath = defaultTerminationPath
	}
	termPolicy := c.TerminationMessagePolicy
	if termPolicy == "" {
		termPolicy = corev1.TerminationMessageReadFile
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: act.Attempt},
		Image:      &runtimeapi.ImageSpec{Image: c.Image},
		Command:    env.ExpandAll(c.Command, vars),
		Args:       env.ExpandAll(c.Args, vars),
		WorkingDir: c.WorkingDir,
		Envs:       envs,
		Mounts:     mounts,
		Labels:     labels,
		Annotations: map[string]string{
			"io.kubernetes.container.restartCount": strconv.Itoa(int(act.Attempt)),
			annotationTerminationPath:              termPath,
			annotationTerminationPolicy:            string(termPolicy),
		},
		LogPath: filepath.Join(c.Name, strconv.Itoa(int(act.Attempt))+".log"),
		Stdin:   c.Stdin, StdinOnce: c.StdinOnce, Tty: c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       containerResources(pod, c, a.host.memory.Value()),
			SecurityContext: containerSecurity(pod, c),
		},
	}
	a.events.Record(pod, c.Name, corev1.EventTypeNormal, events.Pulled, "Container image %q already present on machine", c.Image)
	id, err := a.rt.Runtime.CreateContainer(ctx, obs.Sandbox.ID, cfg, sbCfg)
	if err != nil {
		return &startError{c.Name, "CreateContainerError", runtimeMessage(err)}
	}
	a.events.Record(pod, c.Name, corev1.EventTypeNormal, events.Created, "Created container: %s", c.Name)
	a.log.Info("starting container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "id", shortID(id), "attempt", act.Attempt)
	if err := a.rt.Runtime.StartContainer(ctx, id); err != nil {
		return &startError{c.Name, "RunContainerError", runtimeMessage(err)}
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
	a.log.Info("stopping container", "pod", pod.Namespace+"/"+pod.Name, "container", act.Container, "id", shortID(act.ID), "grace", grace)
	return a.rt.Runtime.StopContainer(ctx, act.ID, grace)
}

// podFileMounts adds to mounts the files the agent provides a container:
// its termination message file and, off the host network, the pod's
// /etc/hosts (unless the container mounts something there itself).
func (a *Agent) podFileMounts(pod *corev1.Pod, c *corev1.Container, attempt uint32, obs observed, mounts []*runtimeapi.Mount) ([]*runtimeapi.Mount, error) {
	has := func(p string) bool {
		return slices.ContainsFunc(mounts, func(m *runtimeapi.Mount) bool { return m.ContainerPath == p })
	}
	termPath := c.TerminationMessagePath
	if termPath == "" {
		termPath = defaultTerminationPath
	}
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

// removeOrphans stops and removes the sandboxes of pods no longer bound to
// this node (deleted without a graceful stop, or rebound elsewhere).
func (a *Agent) removeOrphans(ctx context.Context, live map[types.UID]bool) {
	sbs, err := a.rt.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
	if err != nil {
		return
	}
	for _, sb := range sbs {
		uid := sb.Labels[labelPodUID]
		if uid == "" || live[types.UID(uid)] {
			continue
		}
		a.log.Info("removing sandbox of a pod that is gone", "sandbox", shortID(sb.Id), "pod", sb.Metadata.Namespace+"/"+sb.Metadata.Name)
		if err := a.rt.Runtime.StopPodSandbox(ctx, sb.Id); err == nil {
			_ = a.rt.Runtime.RemovePodSandbox(ctx, sb.Id)
		}
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
