package network

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodDNS(t *testing.T) {
	host := ResolvConf{Servers: []string{"192.0.2.53"}, Searches: []string{"corp.example"}, Options: []string{"edns0"}}
	two := "2"
	pod := func(policy corev1.DNSPolicy, hostNet bool, cfg *corev1.PodDNSConfig) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec: corev1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet, DNSConfig: cfg}}
	}
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		clusterDNS []string
		want       ResolvConf
		fellBack   bool
	}{
		{"ClusterFirst", pod(corev1.DNSClusterFirst, false, nil), []string{"10.43.0.10"},
			ResolvConf{Servers: []string{"10.43.0.10"}, Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}, Options: []string{"ndots:5"}}, false},
		{"ClusterFirst without cluster DNS falls back to Default", pod("", false, nil), nil, host, true},
		{"ClusterFirst on the host network is Default", pod(corev1.DNSClusterFirst, true, nil), []string{"10.43.0.10"}, host, false},
		{"ClusterFirstWithHostNet", pod(corev1.DNSClusterFirstWithHostNet, true, nil), []string{"10.43.0.10"},
			ResolvConf{Servers: []string{"10.43.0.10"}, Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}, Options: []string{"ndots:5"}}, false},
		{"None with dnsConfig", pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"x.example"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}}}), nil,
			ResolvConf{Servers: []string{"1.1.1.1"}, Searches: []string{"x.example"}, Options: []string{"ndots:2"}}, false},
		{"dnsConfig merges", pod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{Nameservers: []string{"10.43.0.10", "1.1.1.1"},
			Searches: []string{"svc.cluster.local", "y.example"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "rotate"}}}),
			[]string{"10.43.0.10"},
			ResolvConf{Servers: []string{"10.43.0.10", "1.1.1.1"}, Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "y.example"},
				Options: []string{"ndots:2", "rotate"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fellBack := PodDNS(tc.pod, tc.clusterDNS, "cluster.local", host)
			if !slices.Equal(got.Servers, tc.want.Servers) || !slices.Equal(got.Searches, tc.want.Searches) ||
				!slices.Equal(got.Options, tc.want.Options) || fellBack != tc.fellBack {
				t.Errorf("got %+v (fell back %v), want %+v (%v)", got, fellBack, tc.want, tc.fellBack)
			}
		})
	}
	// No more than three servers.
	many := pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.0.0.1", "1.0.0.2", "1.0.0.3", "1.0.0.4"}})
	if got, _ := PodDNS(many, nil, "cluster.local", host); len(got.Servers) != 3 {
		t.Errorf("servers = %v", got.Servers)
	}
}

func TestHostsFile(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns"}, Spec: corev1.PodSpec{
		Hostname: "web", Subdomain: "svc",
		HostAliases: []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}},
	}}
	got := string(HostsFile(pod, "10.42.0.7", "cluster.local"))
	for _, want := range []string{
		"# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"10.42.0.7\tweb.svc.ns.svc.cluster.local\tweb\n",
		"\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("hosts file lacks %q:\n%s", want, got)
		}
	}
	pod.Spec.Hostname, pod.Spec.Subdomain, pod.Spec.HostAliases = "", "", nil
	if got := string(HostsFile(pod, "10.42.0.7", "cluster.local")); !strings.HasSuffix(got, "10.42.0.7\tweb-0\n") {
		t.Errorf("hosts file:\n%s", got)
	}
}
