package endpointslice

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"plainkube.dev/plainkube/internal/controller/endpointutil"

	"plainkube.dev/plainkube/internal/api/podutil"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerName is the value of the endpointslice.kubernetes.io/managed-by
// label on the slices this controller owns, as upstream.
const ControllerName = "endpointslice-controller.k8s.io"

// DefaultMaxEndpointsPerSlice is how many endpoints a slice holds at most,
// as upstream's --max-endpoints-per-slice default.
const DefaultMaxEndpointsPerSlice = 100

// State is what plan decides from, read from the informer caches.
type State struct {
	Service *corev1.Service
	// Pods are the pods matching the Service's selector.
	Pods []*corev1.Pod
	// Nodes looks nodes up.
	Nodes NodeLookup
	// Existing are the slices managed by this controller that carry the
	// Service's name label, none being deleted.
	Existing []*discoveryv1.EndpointSlice
	// MaxPerSlice is how many endpoints a slice holds at most (below 1:
	// DefaultMaxEndpointsPerSlice).
	MaxPerSlice int
}

// Plan is what it takes to make a Service's EndpointSlices match its pods:
// slices to create (by generateName), to update (by name) and to delete.
type Plan struct {
	Create, Update, Delete []*discoveryv1.EndpointSlice
	// MissingNodes are nodes that pods name but that do not exist: their
	// pods were left out, to be looked at again later.
	MissingNodes []string
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool { return len(p.Create)+len(p.Update)+len(p.Delete) == 0 }

// NodeLookup says whether a node exists and, if so, its zone label.
type NodeLookup func(name string) (zone string, exists bool)

// plan computes the changes that make the existing slices list the
// endpoints of the pods, as upstream's reconciler does:
//
//   - one address type per IP family of the Service;
//   - pods grouped by their resolved port set (a named targetPort resolves
//     per pod, so pods that resolve differently land in different slices);
//   - existing slices are kept, updated in place or deleted; new endpoints
//     fill slices already being updated, then the unchanged slice they fit
//     best, then new slices of at most maxPerSlice endpoints;
//   - a Service without endpoints keeps one empty placeholder slice;
//   - a slice about to be deleted is reused (updated) instead of creating
//     a new one.
//
// Pods on a node that does not exist are left out (unless the Service
// publishes not-ready addresses) and reported in MissingNodes, so that the
// caller looks again later.
func plan(st State) (p Plan) {
	svc, pods, nodes, existing, maxPerSlice := st.Service, st.Pods, st.Nodes, st.Existing, st.MaxPerSlice
	if maxPerSlice < 1 {
		maxPerSlice = DefaultMaxEndpointsPerSlice
	}
	types := AddressTypes(svc)
	byType := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	for _, s := range sortedByName(existing) {
		if !slices.Contains(types, s.AddressType) {
			p.Delete = append(p.Delete, s)
			continue
		}
		byType[s.AddressType] = append(byType[s.AddressType], s)
	}
	pods = slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	for _, at := range types {
		sub, missing := planAddressType(svc, pods, nodes, byType[at], at, maxPerSlice)
		p.Create = append(p.Create, sub.Create...)
		p.Update = append(p.Update, sub.Update...)
		p.Delete = append(p.Delete, sub.Delete...)
		for _, n := range missing {
			if !slices.Contains(p.MissingNodes, n) {
				p.MissingNodes = append(p.MissingNodes, n)
			}
		}
	}
	return p
}

// AddressTypes are the EndpointSlice address types a Service gets: one per
// entry of spec.ipFamilies; without families, the family of the cluster IP,
// or both for a headless Service (as upstream, for objects written before
// families existed).
func AddressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	add := func(t discoveryv1.AddressType) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			add(discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			add(discoveryv1.AddressTypeIPv6)
		}
	}
	if len(out) > 0 {
		return out
	}
	if endpointutil.IsServiceIPSet(svc) {
		if strings.Contains(svc.Spec.ClusterIP, ":") {
			return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
		}
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	}
	return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
}

func planAddressType(svc *corev1.Service, pods []*corev1.Pod, nodes NodeLookup, existing []*discoveryv1.EndpointSlice, at discoveryv1.AddressType, max int) (p Plan, missing []string) {
	existingByPorts := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if ownedBy(s, svc) {
			k := endpointutil.PortsKey(s.Ports)
			existingByPorts[k] = append(existingByPorts[k], s)
		} else {
			p.Delete = append(p.Delete, s)
		}
	}

	desired := map[string]*endpointutil.EndpointSet{}
	desiredPorts := map[string][]discoveryv1.EndpointPort{}
	var keys []string
	for _, pod := range pods {
		if !endpointutil.ShouldPodBeInEndpoints(pod, true) {
			continue
		}
		ports := EndpointPorts(svc, pod)
		k := endpointutil.PortsKey(ports)
		zone, exists := nodes(pod.Spec.NodeName)
		if !exists && !svc.Spec.PublishNotReadyAddresses {
			missing = append(missing, pod.Spec.NodeName)
			continue
		}
		ep := PodToEndpoint(pod, zone, svc, at)
		if len(ep.Addresses) == 0 {
			continue
		}
		if desired[k] == nil {
			desired[k] = endpointutil.NewEndpointSet()
			desiredPorts[k] = ports
			keys = append(keys, k)
		}
		desired[k].Insert(ep)
	}

	for _, k := range keys {
		sub := planPorts(svc, existingByPorts[k], desired[k], desiredPorts[k], at, max)
		p.Create = append(p.Create, sub.Create...)
		p.Update = append(p.Update, sub.Update...)
		p.Delete = append(p.Delete, sub.Delete...)
	}
	for _, k := range slices.Sorted(maps.Keys(existingByPorts)) {
		if desired[k] == nil {
			p.Delete = append(p.Delete, existingByPorts[k]...)
		}
	}

	// A Service without endpoints keeps one empty placeholder slice.
	if len(existing) == len(p.Delete) && len(p.Create) == 0 {
		placeholder := newSlice(svc, []discoveryv1.EndpointPort{}, at)
		if len(p.Delete) == 1 && isPlaceholderFor(p.Delete[0], placeholder) {
			p.Delete = nil
		} else {
			p.Create = append(p.Create, placeholder)
		}
	}

	// Reuse slices about to be deleted instead of creating new ones.
	for i := 0; i < len(p.Delete) && len(p.Create) > 0; {
		del := p.Delete[i]
		if del.AddressType != at || !ownedBy(del, svc) {
			i++
			continue
		}
		s := p.Create[len(p.Create)-1]
		p.Create = p.Create[:len(p.Create)-1]
		reused := del.DeepCopy()
		reused.Labels = s.Labels
		reused.Ports = s.Ports
		reused.Endpoints = s.Endpoints
		p.Update = append(p.Update, reused)
		p.Delete = slices.Delete(p.Delete, i, i+1)
	}
	return p, missing
}

// planPorts is upstream's reconcileByPortMapping for the slices of one
// port set.
func planPorts(svc *corev1.Service, existing []*discoveryv1.EndpointSlice, want *endpointutil.EndpointSet, ports []discoveryv1.EndpointPort, at discoveryv1.AddressType, max int) (p Plan) {
	var unchanged, toUpdate []*discoveryv1.EndpointSlice

	// 1. Keep the endpoints still wanted, in the slice that has them.
	for _, s := range existing {
		var kept []discoveryv1.Endpoint
		changed := false
		for i := range s.Endpoints {
			got := want.Get(&s.Endpoints[i])
			if got == nil {
				continue
			}
			kept = append(kept, *got)
			if !endpointutil.EndpointsEqualBeyondKey(got, &s.Endpoints[i]) {
				changed = true
			}
			want.Remove(&s.Endpoints[i])
		}
		labels, labelsChanged := sliceLabels(s, svc)
		switch {
		case changed || len(kept) != len(s.Endpoints):
			if len(kept) == 0 {
				p.Delete = append(p.Delete, s)
				continue
			}
			u := s.DeepCopy()
			u.Endpoints = kept
			u.Labels = labels
			toUpdate = append(toUpdate, u)
		case labelsChanged:
			u := s.DeepCopy()
			u.Labels = labels
			toUpdate = append(toUpdate, u)
		default:
			unchanged = append(unchanged, s)
		}
	}

	// 2. Fill the slices being updated anyway, fullest first.
	if want.Len() > 0 && len(toUpdate) > 0 {
		byFullness := slices.Clone(toUpdate)
		slices.SortStableFunc(byFullness, func(a, b *discoveryv1.EndpointSlice) int {
			return cmp.Compare(len(b.Endpoints), len(a.Endpoints))
		})
		for _, s := range byFullness {
			for want.Len() > 0 && len(s.Endpoints) < max {
				s.Endpoints = append(s.Endpoints, *want.Pop())
			}
		}
	}

	// 3. Put the rest into the unchanged slice they fit best, else into new
	// slices.
	for want.Len() > 0 {
		var fill *discoveryv1.EndpointSlice
		if want.Len() < max && len(unchanged) > 0 {
			if i := sliceToFill(unchanged, want.Len(), max); i >= 0 {
				fill = unchanged[i].DeepCopy()
				unchanged = slices.Delete(unchanged, i, i+1)
			}
		}
		if fill == nil {
			fill = newSlice(svc, ports, at)
		}
		for want.Len() > 0 && len(fill.Endpoints) < max {
			fill.Endpoints = append(fill.Endpoints, *want.Pop())
		}
		if fill.Name != "" {
			toUpdate = append(toUpdate, fill)
		} else {
			p.Create = append(p.Create, fill)
		}
	}
	p.Update = toUpdate
	return p
}

// sliceToFill returns the index of the slice that is closest to full after
// adding n endpoints, or -1 if none has room.
func sliceToFill(candidates []*discoveryv1.EndpointSlice, n, max int) int {
	best, bestDiff := -1, max
	for i, s := range candidates {
		diff := max - (n + len(s.Endpoints))
		if diff >= 0 && diff < bestDiff {
			best, bestDiff = i, diff
			if diff == 0 {
				break
			}
		}
	}
	return best
}

// EndpointPorts resolves the Service's ports for one pod; a port whose
// named targetPort the pod lacks is left out. A headless Service may have
// no ports.
func EndpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		n, err := endpointutil.FindPort(pod, sp)
		if err != nil {
			continue
		}
		name, proto := sp.Name, sp.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		out = append(out, discoveryv1.EndpointPort{Name: &name, Port: &n, Protocol: &proto, AppProtocol: sp.AppProtocol})
	}
	return out
}

// PodToEndpoint is the endpoint of one pod for one address type, as
// upstream: serving is the pod's readiness, terminating its deletion, and
// ready is serving and not terminating unless the Service publishes
// not-ready addresses, when it is always true.
func PodToEndpoint(pod *corev1.Pod, zone string, svc *corev1.Service, at discoveryv1.AddressType) discoveryv1.Endpoint {
	serving := podutil.IsReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses:  []string{},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	for _, ip := range endpointutil.PodIPs(pod) {
		if ip.Is6() == (at == discoveryv1.AddressTypeIPv6) {
			ep.Addresses = append(ep.Addresses, ip.String())
		}
	}
	if pod.Spec.NodeName != "" {
		nodeName := pod.Spec.NodeName
		ep.NodeName = &nodeName
	}
	if zone != "" {
		ep.Zone = &zone
	}
	if endpointutil.ShouldSetHostname(pod, svc) {
		hostname := pod.Spec.Hostname
		ep.Hostname = &hostname
	}
	return ep
}

// newSlice is an empty slice for svc, named by generateName "<svc>-".
func newSlice(svc *corev1.Service, ports []discoveryv1.EndpointPort, at discoveryv1.AddressType) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    endpointutil.SlicePrefix(svc.Name),
			Namespace:       svc.Namespace,
			OwnerReferences: []metav1.OwnerReference{ownerRef(svc)},
		},
		AddressType: at,
		Ports:       ports,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	s.Labels, _ = sliceLabels(s, svc)
	return s
}

func ownerRef(svc *corev1.Service) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID, Controller: &yes, BlockOwnerDeletion: &yes}
}

func ownedBy(s *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, o := range s.OwnerReferences {
		if o.UID == svc.UID && o.Kind == "Service" && o.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// isReservedLabel: labels the controller sets itself, never copied from
// the Service.
func isReservedLabel(k string) bool {
	return k == discoveryv1.LabelServiceName || k == discoveryv1.LabelManagedBy || k == corev1.IsHeadlessService
}

// sliceLabels are the labels a slice of svc should carry (the Service's
// labels, the headless marker, the service name and managed-by), and
// whether the slice's copy of the Service's labels is out of date.
func sliceLabels(s *discoveryv1.EndpointSlice, svc *corev1.Service) (map[string]string, bool) {
	have, want := map[string]string{}, map[string]string{}
	for k, v := range s.Labels {
		if !isReservedLabel(k) {
			have[k] = v
		}
	}
	for k, v := range svc.Labels {
		if !isReservedLabel(k) {
			want[k] = v
		}
	}
	changed := !maps.Equal(have, want)
	if !endpointutil.IsServiceIPSet(svc) {
		want[corev1.IsHeadlessService] = ""
	}
	want[discoveryv1.LabelServiceName] = svc.Name
	want[discoveryv1.LabelManagedBy] = ControllerName
	return want, changed
}

// isPlaceholderFor reports whether s is already the placeholder p would be:
// no endpoints, no ports, the same labels and owner.
func isPlaceholderFor(s, p *discoveryv1.EndpointSlice) bool {
	if len(s.Endpoints) != 0 || len(s.Ports) != 0 || s.AddressType != p.AddressType || s.Namespace != p.Namespace {
		return false
	}
	if !maps.Equal(s.Labels, p.Labels) || len(s.OwnerReferences) != len(p.OwnerReferences) {
		return false
	}
	for i := range s.OwnerReferences {
		if s.OwnerReferences[i].String() != p.OwnerReferences[i].String() {
			return false
		}
	}
	return true
}

func sortedByName(in []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	return slices.SortedFunc(slices.Values(in), func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
}
