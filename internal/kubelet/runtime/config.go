package runtime

import (
	"errors"
	"path/filepath"
	"strconv"

	"k8s.io/component-helpers/node/util/sysctl"

	grpcstatus "google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"plainkube.dev/plainkube/internal/kubelet/env"
)

// Labels the agent puts on sandboxes and containers (upstream's names, so
// crictl output reads the same).
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
)

func podLabels(pod *corev1.Pod) map[string]string {
	return map[string]string{LabelPodName: pod.Name, LabelPodNamespace: pod.Namespace, labelPodUID: string(pod.UID)}
}

// ErrorMessage is err as upstream shows a runtime's error: the gRPC
// status's message, without the "rpc error: code = … desc =" prefix.
func ErrorMessage(err error) error {
	if st, ok := grpcstatus.FromError(err); ok {
		return errors.New(st.Message())
	}
	return err
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

// SandboxConfig is the CRI configuration of pod's sandbox at attempt,
// with its hostname ("" on the host network), resolver configuration and
// log directory.
func SandboxConfig(pod *corev1.Pod, attempt uint32, hostname string, dns *runtimeapi.DNSConfig, logDir string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Hostname:     hostname,
		LogDirectory: logDir,
		DnsConfig:    dns,
		Labels:       podLabels(pod),
		Annotations:  pod.Annotations,
		PortMappings: portMappings(pod),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: sandboxSecurity(pod),
			Sysctls:         sysctls(pod),
		},
	}
}

// sysctls are the pod's sysctls by their dotted names (the node admitted
// them: see internal/kubelet's sysctls.go).
func sysctls(pod *corev1.Pod) map[string]string {
	if pod.Spec.SecurityContext == nil || len(pod.Spec.SecurityContext.Sysctls) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		out[sysctl.NormalizeName(s.Name)] = s.Value
	}
	return out
}

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

// ContainerConfig is the CRI configuration of attempt of container c of
// pod: its environment (vars, which also expand $(VAR) in its command and
// args), mounts, labels, the annotations that say where its termination
// message is, its log path (in the sandbox's log directory), and its
// security context and resources (nodeMemory: the node's memory capacity
// in bytes).
func ContainerConfig(pod *corev1.Pod, c *corev1.Container, attempt uint32, vars []env.Var, mounts []*runtimeapi.Mount, nodeMemory int64) *runtimeapi.ContainerConfig {
	labels := podLabels(pod)
	labels[LabelContainerName] = c.Name
	var envs []*runtimeapi.KeyValue
	for _, e := range vars {
		envs = append(envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	termPolicy := c.TerminationMessagePolicy
	if termPolicy == "" {
		termPolicy = corev1.TerminationMessageReadFile
	}
	return &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: attempt},
		Image:      &runtimeapi.ImageSpec{Image: c.Image},
		Command:    env.ExpandAll(c.Command, vars),
		Args:       env.ExpandAll(c.Args, vars),
		WorkingDir: c.WorkingDir,
		Envs:       envs,
		Mounts:     mounts,
		Labels:     labels,
		Annotations: map[string]string{
			"io.kubernetes.container.restartCount": strconv.Itoa(int(attempt)),
			annotationTerminationPath:              TerminationPath(c),
			annotationTerminationPolicy:            string(termPolicy),
		},
		LogPath: filepath.Join(c.Name, strconv.Itoa(int(attempt))+".log"),
		Stdin:   c.Stdin, StdinOnce: c.StdinOnce, Tty: c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       containerResources(pod, c, nodeMemory),
			SecurityContext: containerSecurity(pod, c),
		},
	}
}

// TerminationPath is the path of c's termination message file inside it.
func TerminationPath(c *corev1.Container) string {
	if c.TerminationMessagePath == "" {
		return defaultTerminationPath
	}
	return c.TerminationMessagePath
}
