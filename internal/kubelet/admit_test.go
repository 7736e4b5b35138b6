package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestHostPortsConflict(t *testing.T) {
	withPort := func(proto corev1.Protocol, ip string, port int32) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: port, HostIP: ip, Protocol: proto}}}}}}
	}
	for _, tc := range []struct {
		name      string
		pod, held *corev1.Pod
		want      bool
	}{
		{"same port, any address", withPort("", "", 8080), withPort(corev1.ProtocolTCP, "", 8080), true},
		{"other port", withPort("", "", 8080), withPort("", "", 8081), false},
		{"other protocol", withPort(corev1.ProtocolUDP, "", 8080), withPort(corev1.ProtocolTCP, "", 8080), false},
		{"held on every address", withPort("", "10.0.0.1", 8080), withPort("", "0.0.0.0", 8080), true},
		{"two addresses", withPort("", "10.0.0.1", 8080), withPort("", "10.0.0.2", 8080), false},
		{"no host port", withPort("", "", 0), withPort("", "", 0), false},
	} {
		if got := hostPortsConflict(tc.pod, []*corev1.Pod{tc.held}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestForbiddenSysctl: safe sysctls pass, by either separator; unsafe ones
// and namespaced ones of a namespace shared with the host are refused, in
// upstream's words.
func TestForbiddenSysctl(t *testing.T) {
	pod := func(hostNet, hostIPC bool, names ...string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, SecurityContext: &corev1.PodSecurityContext{}}}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	for _, c := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{&corev1.Pod{}, ""},
		{pod(false, false, "kernel.shm_rmid_forced", "net/ipv4/ip_local_port_range"), ""},
		{pod(false, false, "kernel.msgmax"), `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{pod(true, false, "net.ipv4.tcp_syncookies"), `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{pod(false, true, "kernel.shm_rmid_forced"), `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
	} {
		if got := forbiddenSysctl(c.pod); got != c.want {
			t.Errorf("%+v: %q, want %q", c.pod.Spec.SecurityContext, got, c.want)
		}
	}
}
