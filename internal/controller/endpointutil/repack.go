package endpointutil

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Repack puts subsets into the canonical form upstream's RepackSubsets
// gives them: each address once per subset, an address ready on a port if
// any input says so, ports offered by exactly the same addresses grouped
// into one subset, and everything sorted, so that two computations of the
// same endpoints compare equal.
func Repack(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	type addrKey struct{ ip, uid string }
	keyOf := func(a *corev1.EndpointAddress) addrKey {
		k := addrKey{ip: a.IP}
		if a.TargetRef != nil {
			k.uid = string(a.TargetRef.UID)
		}
		return k
	}
	addrs := map[addrKey]corev1.EndpointAddress{}
	ports := map[string]*corev1.EndpointPort{} // port key -> port; "" for "no port"
	readyByPort := map[string]map[addrKey]bool{}
	note := func(a *corev1.EndpointAddress, pk string, ready bool) {
		k := keyOf(a)
		if _, ok := addrs[k]; !ok {
			addrs[k] = *a
		}
		if readyByPort[pk] == nil {
			readyByPort[pk] = map[addrKey]bool{}
		}
		if was, ok := readyByPort[pk][k]; !ok || !was {
			readyByPort[pk][k] = ready
		}
	}
	for i := range subsets {
		s := &subsets[i]
		pks := []string{""}
		if len(s.Ports) > 0 {
			pks = pks[:0]
			for j := range s.Ports {
				pk := portKey(&s.Ports[j])
				ports[pk] = &s.Ports[j]
				pks = append(pks, pk)
			}
		}
		for _, pk := range pks {
			for j := range s.Addresses {
				note(&s.Addresses[j], pk, true)
			}
			for j := range s.NotReadyAddresses {
				note(&s.NotReadyAddresses[j], pk, false)
			}
		}
	}

	// Group ports by the exact set of (address, readiness) offering them.
	type group struct {
		sig   string
		set   map[addrKey]bool
		ports []corev1.EndpointPort
	}
	groups := map[string]*group{}
	for _, pk := range slices.Sorted(maps.Keys(readyByPort)) {
		set := readyByPort[pk]
		var parts []string
		for k, r := range set {
			parts = append(parts, fmt.Sprintf("%s|%s|%v", k.ip, k.uid, r))
		}
		slices.Sort(parts)
		sig := strings.Join(parts, ",")
		g := groups[sig]
		if g == nil {
			g = &group{sig: sig, set: set}
			groups[sig] = g
		}
		if pk != "" {
			g.ports = append(g.ports, *ports[pk])
		}
	}
	var out []corev1.EndpointSubset
	for _, sig := range slices.Sorted(maps.Keys(groups)) {
		g := groups[sig]
		var s corev1.EndpointSubset
		for k, ready := range g.set {
			if ready {
				s.Addresses = append(s.Addresses, addrs[k])
			} else {
				s.NotReadyAddresses = append(s.NotReadyAddresses, addrs[k])
			}
		}
		sortAddresses(s.Addresses)
		sortAddresses(s.NotReadyAddresses)
		slices.SortFunc(g.ports, func(a, b corev1.EndpointPort) int { return cmp.Compare(portKey(&a), portKey(&b)) })
		s.Ports = g.ports
		out = append(out, s)
	}
	return out
}

func portKey(p *corev1.EndpointPort) string {
	app := ""
	if p.AppProtocol != nil {
		app = *p.AppProtocol
	}
	return fmt.Sprintf("%s/%05d/%s/%s", p.Name, p.Port, p.Protocol, app)
}

func sortAddresses(a []corev1.EndpointAddress) {
	slices.SortFunc(a, func(x, y corev1.EndpointAddress) int {
		if c := cmp.Compare(x.IP, y.IP); c != 0 {
			return c
		}
		var ux, uy string
		if x.TargetRef != nil {
			ux = string(x.TargetRef.UID)
		}
		if y.TargetRef != nil {
			uy = string(y.TargetRef.UID)
		}
		return cmp.Compare(ux, uy)
	})
}
