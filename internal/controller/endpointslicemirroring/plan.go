package endpointslicemirroring

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	netutils "k8s.io/utils/net"

	"plainkube.dev/plainkube/internal/controller/endpointutil"
)

// ControllerName is the value of the endpointslice.kubernetes.io/managed-by
// label on the slices this controller owns, as upstream.
const ControllerName = "endpointslicemirroring-controller.k8s.io"

// DefaultMaxEndpointsPerSubset is how many addresses of one Endpoints
// subset are mirrored at most, as upstream's
// --mirroring-max-endpoints-per-subset default.
const DefaultMaxEndpointsPerSubset = 1000

// The reasons of the events the controller records on an Endpoints
// object, as upstream.
const (
	ReasonInvalidIPAddress         = "InvalidIPAddress"
	ReasonTooManyAddressesToMirror = "TooManyAddressesToMirror"
)

// State is what plan decides from, read from the informer caches.
type State struct {
	// Endpoints is the object mirrored; nil when it does not exist.
	Endpoints *corev1.Endpoints
	// Service is the Service of the same name; nil when it does not exist.
	Service *corev1.Service
	// Existing are the slices managed by this controller that carry the
	// Endpoints' name as their service-name label.
	Existing []*discoveryv1.EndpointSlice
	// MaxPerSubset is how many addresses of one subset are mirrored at most
	// (below 1: DefaultMaxEndpointsPerSubset).
	MaxPerSubset int
}

// Plan is what it takes to make the mirrored slices match the Endpoints:
// slices to create (by generateName), update (by name) and delete, and
// warnings to record on the Endpoints.
type Plan struct {
	Create, Update, Delete []*discoveryv1.EndpointSlice
	Events                 []Event
	// Mirror is false when the Endpoints is not to be mirrored at all
	// (every existing slice is in Delete).
	Mirror bool
}

// Event is a warning to record on the Endpoints.
type Event struct {
	Reason, Message string
}

// Empty reports whether the plan writes nothing.
func (p Plan) Empty() bool { return len(p.Create)+len(p.Update)+len(p.Delete) == 0 }

// ShouldMirror reports whether an Endpoints object is one to mirror as far
// as the object itself says: not labelled
// endpointslice.kubernetes.io/skip-mirror=true and not a leader-election
// lock (an Endpoints carrying the control-plane.alpha.kubernetes.io/leader
// annotation).
func ShouldMirror(ep *corev1.Endpoints) bool {
	if ep == nil || ep.Labels[discoveryv1.LabelSkipMirror] == "true" {
		return false
	}
	_, isLock := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]
	return !isLock
}

// plan computes the changes that make the existing slices mirror the
// Endpoints, as upstream's mirroring reconciler does:
//
//   - nothing is mirrored (every existing slice is deleted) unless the
//     Endpoints exists and ShouldMirror, and its Service exists without a
//     selector (a Service with a selector has its slices from the
//     EndpointSlice controller);
//   - the subsets are repacked (endpointutil.Repack); each subset gives
//     one slice per address type with its ports, its addresses as ready
//     endpoints and its notReadyAddresses as endpoints with ready=false,
//     at most maxPerSubset addresses of it (ready ones first); an address
//     that is not an IP is skipped and warned about, as are addresses over
//     the cap;
//   - each (address type, ports) keeps at most one existing slice, updated
//     in place when its endpoints, labels, annotations or owner differ;
//     the others are deleted, and a slice about to be deleted is renamed
//     into one about to be created (per address type) instead.
//
// Slices carry the Endpoints' labels and annotations (but the
// last-change-trigger-time and kubectl's last-applied-configuration),
// kubernetes.io/service-name, the managed-by label and a controller
// reference to the Endpoints.
func plan(st State) (p Plan) {
	existing := slices.SortedFunc(slices.Values(st.Existing), func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	ep, svc := st.Endpoints, st.Service
	if !ShouldMirror(ep) || svc == nil || svc.Spec.Selector != nil {
		p.Delete = existing
		return p
	}
	p.Mirror = true
	max := st.MaxPerSubset
	if max < 1 {
		max = DefaultMaxEndpointsPerSubset
	}

	d := desiredFrom(ep, max)
	if d.invalid > 0 {
		p.Events = append(p.Events, Event{ReasonInvalidIPAddress,
			fmt.Sprintf("Skipped %d invalid IP addresses when mirroring to EndpointSlices", d.invalid)})
	}
	if d.skipped > d.invalid {
		p.Events = append(p.Events, Event{ReasonTooManyAddressesToMirror,
			fmt.Sprintf("A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped", max, d.skipped)})
	}

	existingByKey := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		k := sliceKey(s.AddressType, s.Ports)
		existingByKey[k] = append(existingByKey[k], s)
	}
	for _, k := range d.keys {
		want := d.endpoints[k]
		have := existingByKey[k]
		if len(have) == 0 {
			p.Create = append(p.Create, newSlice(ep, d.ports[k], d.addressType[k], want))
			continue
		}
		p.Delete = append(p.Delete, have[1:]...)
		if !upToDate(have[0], ep, want) {
			s := newSlice(ep, d.ports[k], d.addressType[k], want)
			s.Name, s.ResourceVersion = have[0].Name, have[0].ResourceVersion
			p.Update = append(p.Update, s)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(existingByKey)) {
		if d.endpoints[k] == nil {
			p.Delete = append(p.Delete, existingByKey[k]...)
		}
	}
	recycle(&p)
	return p
}

// desired is what the Endpoints asks for, per (address type, ports) key in
// the order the keys were first seen.
type desired struct {
	keys        []string
	endpoints   map[string]*endpointutil.EndpointSet
	ports       map[string][]discoveryv1.EndpointPort
	addressType map[string]discoveryv1.AddressType
	// invalid counts addresses that are not IPs; skipped counts every
	// address left out, invalid ones included.
	invalid, skipped int
}

func desiredFrom(ep *corev1.Endpoints, max int) *desired {
	d := &desired{
		endpoints:   map[string]*endpointutil.EndpointSet{},
		ports:       map[string][]discoveryv1.EndpointPort{},
		addressType: map[string]discoveryv1.AddressType{},
	}
	for _, subset := range endpointutil.Repack(ep.Subsets) {
		ports := slicePorts(subset.Ports)
		added := 0
		add := func(addrs []corev1.EndpointAddress, ready bool) {
			for i := range addrs {
				if added >= max {
					return
				}
				e, at, ok := addressToEndpoint(&addrs[i], ready)
				if !ok {
					d.invalid++
					continue
				}
				k := sliceKey(at, ports)
				if d.endpoints[k] == nil {
					d.keys = append(d.keys, k)
					d.endpoints[k] = endpointutil.NewEndpointSet()
					d.ports[k] = ports
					d.addressType[k] = at
				}
				d.endpoints[k].Insert(e)
				added++
			}
		}
		add(subset.Addresses, true)
		add(subset.NotReadyAddresses, false)
		d.skipped += len(subset.Addresses) + len(subset.NotReadyAddresses) - added
	}
	return d
}

// sliceKey identifies the slice of one address type and port set.
func sliceKey(at discoveryv1.AddressType, ports []discoveryv1.EndpointPort) string {
	return string(at) + "-" + endpointutil.PortsKey(ports)
}

// addressToEndpoint is the endpoint mirroring one address, and its address
// type; ok is false when the address is not an IP. The IP is written in
// its canonical form.
func addressToEndpoint(a *corev1.EndpointAddress, ready bool) (ep discoveryv1.Endpoint, at discoveryv1.AddressType, ok bool) {
	ip := netutils.ParseIPSloppy(a.IP)
	if ip == nil {
		return ep, "", false
	}
	at = discoveryv1.AddressTypeIPv4
	if ip.To4() == nil {
		at = discoveryv1.AddressTypeIPv6
	}
	ep = discoveryv1.Endpoint{
		Addresses:  []string{ip.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		TargetRef:  a.TargetRef.DeepCopy(),
	}
	if a.NodeName != nil {
		node := *a.NodeName
		ep.NodeName = &node
	}
	if a.Hostname != "" {
		hostname := a.Hostname
		ep.Hostname = &hostname
	}
	return ep, at, true
}

// slicePorts are the EndpointSlice ports of an Endpoints subset's ports.
func slicePorts(in []corev1.EndpointPort) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for _, p := range in {
		name, port, proto := p.Name, p.Port, p.Protocol
		var app *string
		if p.AppProtocol != nil {
			a := *p.AppProtocol
			app = &a
		}
		out = append(out, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto, AppProtocol: app})
	}
	return out
}

// droppedAnnotations are the Endpoints annotations not copied to its
// slices.
var droppedAnnotations = []string{corev1.EndpointsLastChangeTriggerTime, corev1.LastAppliedConfigAnnotation}

// sliceAnnotations are the annotations the slices of ep carry.
func sliceAnnotations(ep *corev1.Endpoints) map[string]string {
	out := map[string]string{}
	for k, v := range ep.Annotations {
		if !slices.Contains(droppedAnnotations, k) {
			out[k] = v
		}
	}
	return out
}

// sliceLabels are the labels the slices of ep carry: its own, with the
// service name and managed-by set over them.
func sliceLabels(ep *corev1.Endpoints) map[string]string {
	out := maps.Clone(ep.Labels)
	if out == nil {
		out = map[string]string{}
	}
	out[discoveryv1.LabelServiceName] = ep.Name
	out[discoveryv1.LabelManagedBy] = ControllerName
	return out
}

// newSlice is a slice of ep holding the endpoints of want, named by
// generateName.
func newSlice(ep *corev1.Endpoints, ports []discoveryv1.EndpointPort, at discoveryv1.AddressType, want *endpointutil.EndpointSet) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    endpointutil.SlicePrefix(ep.Name),
			Namespace:       ep.Namespace,
			Labels:          sliceLabels(ep),
			Annotations:     sliceAnnotations(ep),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ep, corev1.SchemeGroupVersion.WithKind("Endpoints"))},
		},
		AddressType: at,
		Ports:       ports,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for want.Len() > 0 {
		s.Endpoints = append(s.Endpoints, *want.Pop())
	}
	return s
}

// upToDate reports whether an existing slice already mirrors want and the
// Endpoints' labels and annotations, owned by this Endpoints object (not
// an earlier one of the same name). It leaves want as it was.
func upToDate(s *discoveryv1.EndpointSlice, ep *corev1.Endpoints, want *endpointutil.EndpointSet) bool {
	if len(s.Endpoints) != want.Len() {
		return false
	}
	for i := range s.Endpoints {
		got := want.Get(&s.Endpoints[i])
		if got == nil || !endpointutil.EndpointsEqualBeyondKey(got, &s.Endpoints[i]) {
			return false
		}
	}
	if !maps.Equal(s.Labels, sliceLabels(ep)) || !maps.Equal(s.Annotations, sliceAnnotations(ep)) {
		return false
	}
	for _, o := range s.OwnerReferences {
		if o.Kind == "Endpoints" && o.Name == ep.Name && o.UID != ep.UID {
			return false
		}
	}
	return true
}

// recycle turns, per address type, a slice to create and one to delete
// into an update of the latter, saving a write.
func recycle(p *Plan) {
	for i := 0; i < len(p.Create); {
		c := p.Create[i]
		j := slices.IndexFunc(p.Delete, func(d *discoveryv1.EndpointSlice) bool { return d.AddressType == c.AddressType })
		if j < 0 {
			i++
			continue
		}
		c.Name, c.ResourceVersion = p.Delete[j].Name, p.Delete[j].ResourceVersion
		p.Update = append(p.Update, c)
		p.Create = slices.Delete(p.Create, i, i+1)
		p.Delete = slices.Delete(p.Delete, j, j+1)
	}
}
