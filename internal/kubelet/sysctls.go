package kubelet

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/node/util/sysctl"
)

// A pod's sysctls (spec.securityContext.sysctls) are set in its sandbox
// by the runtime; the node admits, as upstream's kubelet does by default,
// only the safe ones — namespaced by the kernel, so they cannot reach
// beyond the pod — and not those of a namespace the pod shares with the
// host. Others reject the pod (reason SysctlForbidden).
const reasonSysctlForbidden = "SysctlForbidden"

// safeSysctls are upstream's default allowlist.
var safeSysctls = map[string]bool{
	"kernel.shm_rmid_forced":              true,
	"net.ipv4.ip_local_port_range":        true,
	"net.ipv4.tcp_syncookies":             true,
	"net.ipv4.ping_group_range":           true,
	"net.ipv4.ip_unprivileged_port_start": true,
	"net.ipv4.ip_local_reserved_ports":    true,
	"net.ipv4.tcp_keepalive_time":         true,
	"net.ipv4.tcp_fin_timeout":            true,
	"net.ipv4.tcp_keepalive_intvl":        true,
	"net.ipv4.tcp_keepalive_probes":       true,
	"net.ipv4.tcp_rmem":                   true,
	"net.ipv4.tcp_wmem":                   true,
	"net.ipv4.tcp_slow_start_after_idle":  true,
	"net.ipv4.tcp_notsent_lowat":          true,
}

// forbiddenSysctl says why pod's sysctls may not be set here ("" if they
// may), in upstream's words.
func forbiddenSysctl(pod *corev1.Pod) string {
	if pod.Spec.SecurityContext == nil {
		return ""
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		name := sysctl.NormalizeName(s.Name)
		if !safeSysctls[name] {
			return fmt.Sprintf("forbidden sysctl: %q not allowlisted", name)
		}
		ns, _, _ := sysctl.GetNamespace(name)
		if (ns == sysctl.NetNamespace && pod.Spec.HostNetwork) || (ns == sysctl.IPCNamespace && pod.Spec.HostIPC) {
			return fmt.Sprintf("forbidden sysctl: %q not allowed with host %s enabled", name, ns)
		}
	}
	return ""
}
