package runtime

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/kubelet/events"
)

// Security contexts and resources, as CRI sees them. These are pure
// functions of the pod spec (and, for runAsNonRoot, the image's user):
// the pod's securityContext gives defaults that a container's own
// overrides; requests and limits become cgroup settings the runtime
// enforces.

// effectiveSecurity is c's security context with the pod's defaults
// filled in (runAsUser, runAsGroup, runAsNonRoot, seLinuxOptions).
func effectiveSecurity(pod *corev1.Pod, c *corev1.Container) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{}
	if c.SecurityContext != nil {
		sc = c.SecurityContext.DeepCopy()
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if sc.RunAsUser == nil {
			sc.RunAsUser = psc.RunAsUser
		}
		if sc.RunAsGroup == nil {
			sc.RunAsGroup = psc.RunAsGroup
		}
		if sc.RunAsNonRoot == nil {
			sc.RunAsNonRoot = psc.RunAsNonRoot
		}
		if sc.SELinuxOptions == nil {
			sc.SELinuxOptions = psc.SELinuxOptions
		}
	}
	return sc
}

// containerSecurity is the CRI security context of c.
func containerSecurity(pod *corev1.Pod, c *corev1.Container) *runtimeapi.LinuxContainerSecurityContext {
	sc := effectiveSecurity(pod, c)
	out := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: namespaces(pod)}
	if sc.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
	}
	out.SupplementalGroups = supplementalGroups(pod)
	out.Privileged = sc.Privileged != nil && *sc.Privileged
	out.ReadonlyRootfs = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	// As upstream: no_new_privs only when escalation is explicitly denied.
	out.NoNewPrivs = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	if caps := sc.Capabilities; caps != nil {
		out.Capabilities = &runtimeapi.Capability{}
		for _, c := range caps.Add {
			out.Capabilities.AddCapabilities = append(out.Capabilities.AddCapabilities, string(c))
		}
		for _, c := range caps.Drop {
			out.Capabilities.DropCapabilities = append(out.Capabilities.DropCapabilities, string(c))
		}
	}
	if o := sc.SELinuxOptions; o != nil {
		out.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
	}
	return out
}

// supplementalGroups are the pod's supplementalGroups and its fsGroup.
func supplementalGroups(pod *corev1.Pod) []int64 {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return nil
	}
	groups := append([]int64(nil), psc.SupplementalGroups...)
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	return groups
}

// sandboxSecurity is the CRI security context of pod's sandbox. The
// sandbox is privileged when any container is: the runtime refuses
// privileged containers in an unprivileged sandbox.
func sandboxSecurity(pod *corev1.Pod) *runtimeapi.LinuxSandboxSecurityContext {
	out := &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: namespaces(pod), SupplementalGroups: supplementalGroups(pod)}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			out.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			out.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				out.Privileged = true
			}
		}
	}
	return out
}

// ImageUser is the user an image runs as: a numeric uid, or a name.
type ImageUser struct {
	UID  *int64
	Name string
}

// VerifyNonRoot checks c against runAsNonRoot, as upstream: with it set,
// the container must run as a uid other than 0, by its own runAsUser or
// the image's numeric user. The error is the container's
// CreateContainerConfigError message.
func VerifyNonRoot(pod *corev1.Pod, c *corev1.Container, img ImageUser) error {
	sc := effectiveSecurity(pod, c)
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", events.PodDesc(pod), c.Name)
		}
		return nil
	}
	switch {
	case img.UID != nil && *img.UID == 0, img.UID == nil && img.Name == "":
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", events.PodDesc(pod), c.Name)
	case img.UID == nil:
		if _, err := strconv.Atoi(img.Name); err != nil {
			return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", img.Name, events.PodDesc(pod), c.Name)
		}
	}
	return nil
}

// cgroup CPU constants, upstream's.
const (
	minShares    = 2
	sharesPerCPU = 1024
	quotaPeriod  = 100000 // µs
	minQuota     = 1000
)

// containerResources is the CRI resources of c: cpu shares from its cpu
// request (its limit when it has no request; 2 shares for none), a CFS
// quota from its cpu limit, its memory limit, and an OOM score
// adjustment by the pod's QoS class. nodeMemory is the node's memory
// capacity in bytes.
func containerResources(pod *corev1.Pod, c *corev1.Container, nodeMemory int64) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	cpuReq, cpuLim := c.Resources.Requests.Cpu(), c.Resources.Limits.Cpu()
	milli := cpuReq.MilliValue()
	if cpuReq.IsZero() && !cpuLim.IsZero() {
		milli = cpuLim.MilliValue()
	}
	r.CpuShares = max(milli*sharesPerCPU/1000, minShares)
	if !cpuLim.IsZero() {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = max(cpuLim.MilliValue()*quotaPeriod/1000, minQuota)
	}
	if m := c.Resources.Limits.Memory(); !m.IsZero() {
		r.MemoryLimitInBytes = m.Value()
	}
	r.OomScoreAdj = oomScoreAdj(pod, c, nodeMemory)
	return r
}

// oomScoreAdj is upstream's OOM score adjustment: -997 for Guaranteed
// pods, 1000 for BestEffort, and for Burstable between 2 and 999, lower
// the more memory the container requests of the node's.
func oomScoreAdj(pod *corev1.Pod, c *corev1.Container, nodeMemory int64) int64 {
	switch podspec.ComputePodQOS(pod) {
	case corev1.PodQOSGuaranteed:
		return -997
	case corev1.PodQOSBestEffort:
		return 1000
	}
	if nodeMemory <= 0 {
		return 999
	}
	adj := 1000 - (1000*c.Resources.Requests.Memory().Value())/nodeMemory
	return min(max(adj, 2), 999)
}
