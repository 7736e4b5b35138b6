package network

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"plainkube.dev/plainkube/internal/resolvconf"
)

// Name resolution inside pods, as upstream's kubelet sets it up: a pod's
// /etc/resolv.conf follows its dnsPolicy and dnsConfig (the runtime
// writes it from the sandbox's CRI DNS config), and, unless it is on the
// host network, its containers get an /etc/hosts the agent writes (the
// localhost lines, the pod's IP with its host name, and hostAliases).

// ResolvConf is what a resolv.conf says (package resolvconf reads them);
// a type of its own here so that it carries the CRI conversion.
type ResolvConf resolvconf.Config

// Upstream's resolver limits.
const (
	maxDNSServers      = 3
	maxDNSSearches     = 32
	maxDNSSearchLength = 2048
)

// PodDNS is the resolver configuration of pod, from its dnsPolicy and
// dnsConfig, the cluster DNS servers and domain, and the host's. It
// reports whether ClusterFirst fell back to Default for want of cluster
// DNS servers.
func PodDNS(pod *corev1.Pod, clusterDNS []string, clusterDomain string, host ResolvConf) (rc ResolvConf, fellBack bool) {
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	switch {
	case policy == corev1.DNSClusterFirstWithHostNet:
		policy = corev1.DNSClusterFirst
	case policy == corev1.DNSClusterFirst && pod.Spec.HostNetwork:
		policy = corev1.DNSDefault
	}
	if policy == corev1.DNSClusterFirst && len(clusterDNS) == 0 {
		policy, fellBack = corev1.DNSDefault, true
	}
	switch policy {
	case corev1.DNSDefault:
		rc = ResolvConf{Servers: slices.Clone(host.Servers), Searches: slices.Clone(host.Searches), Options: slices.Clone(host.Options)}
	case corev1.DNSClusterFirst:
		rc.Servers = slices.Clone(clusterDNS)
		rc.Searches = []string{pod.Namespace + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}
		rc.Searches = append(rc.Searches, host.Searches...)
		rc.Options = []string{"ndots:5"}
	}
	if c := pod.Spec.DNSConfig; c != nil {
		rc.Servers = appendNew(rc.Servers, c.Nameservers...)
		rc.Searches = appendNew(rc.Searches, c.Searches...)
		rc.Options = mergeDNSOptions(rc.Options, c.Options)
	}
	rc.Searches = appendNew(nil, rc.Searches...)
	if len(rc.Servers) > maxDNSServers {
		rc.Servers = rc.Servers[:maxDNSServers]
	}
	if len(rc.Searches) > maxDNSSearches {
		rc.Searches = rc.Searches[:maxDNSSearches]
	}
	for len(rc.Searches) > 0 && len(strings.Join(rc.Searches, " ")) > maxDNSSearchLength {
		rc.Searches = rc.Searches[:len(rc.Searches)-1]
	}
	return rc, fellBack
}

// appendNew appends those of vs not already in list.
func appendNew(list []string, vs ...string) []string {
	for _, v := range vs {
		if v != "" && !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// mergeDNSOptions merges a pod's dnsConfig options into base: an option
// of the same name is replaced (in place), others are appended.
func mergeDNSOptions(base []string, opts []corev1.PodDNSConfigOption) []string {
	out := slices.Clone(base)
	name := func(o string) string { n, _, _ := strings.Cut(o, ":"); return n }
	for _, o := range opts {
		s := o.Name
		if o.Value != nil {
			s += ":" + *o.Value
		}
		if i := slices.IndexFunc(out, func(b string) bool { return name(b) == o.Name }); i >= 0 {
			out[i] = s
		} else {
			out = append(out, s)
		}
	}
	return out
}

// CRI is rc as the CRI sandbox config carries it.
func (rc ResolvConf) CRI() *runtimeapi.DNSConfig {
	return &runtimeapi.DNSConfig{Servers: rc.Servers, Searches: rc.Searches, Options: rc.Options}
}

// Hostname is the pod's host name and, when it has a subdomain, its
// fully qualified name (hostname.subdomain.namespace.svc.domain).
func Hostname(pod *corev1.Pod, clusterDomain string) (hostname, fqdn string) {
	hostname = pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	if len(hostname) > 63 {
		hostname = strings.TrimRight(hostname[:63], "-.")
	}
	if pod.Spec.Subdomain != "" {
		fqdn = fmt.Sprintf("%s.%s.%s.svc.%s", hostname, pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, fqdn
}

// HostsFile is the /etc/hosts of a pod (not on the host network) with
// address podIP.
func HostsFile(pod *corev1.Pod, podIP, clusterDomain string) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	hostname, fqdn := Hostname(pod, clusterDomain)
	if podIP != "" {
		if fqdn != "" {
			fmt.Fprintf(&b, "%s\t%s\t%s\n", podIP, fqdn, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", podIP, hostname)
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}
