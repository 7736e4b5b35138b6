package endpointutil

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// SlicePrefix is the generateName of the slices of the Service (or
// Endpoints) name: "<name>-", or the bare name if the dash would make it too
// long.
func SlicePrefix(name string) string {
	prefix := name + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		prefix = name
	}
	return prefix
}

// PortsKey identifies a set of endpoint ports regardless of order.
func PortsKey(ports []discoveryv1.EndpointPort) string {
	parts := make([]string, 0, len(ports))
	for _, p := range ports {
		parts = append(parts, fmt.Sprintf("%s/%s/%d/%s", ptr.Deref(p.Name, ""), ptr.Deref(p.Protocol, corev1.ProtocolTCP), ptr.Deref(p.Port, 0), ptr.Deref(p.AppProtocol, "")))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// EndpointKey identifies an endpoint as upstream's hash does: its
// addresses, hostname and target pod. Everything else may be updated in
// place.
func EndpointKey(ep *discoveryv1.Endpoint) string {
	addrs := slices.Sorted(slices.Values(ep.Addresses))
	var ns, name string
	if ep.TargetRef != nil {
		ns, name = ep.TargetRef.Namespace, ep.TargetRef.Name
	}
	return strings.Join(addrs, ",") + "|" + ptr.Deref(ep.Hostname, "") + "|" + ns + "/" + name
}

// EndpointsEqualBeyondKey compares what EndpointKey leaves out, ignoring
// the target's resourceVersion.
func EndpointsEqualBeyondKey(a, b *discoveryv1.Endpoint) bool {
	if !ptr.Equal(a.NodeName, b.NodeName) || !ptr.Equal(a.Zone, b.Zone) ||
		!ptr.Equal(a.Conditions.Ready, b.Conditions.Ready) ||
		!ptr.Equal(a.Conditions.Serving, b.Conditions.Serving) ||
		!ptr.Equal(a.Conditions.Terminating, b.Conditions.Terminating) {
		return false
	}
	if (a.TargetRef == nil) != (b.TargetRef == nil) {
		return false
	}
	if a.TargetRef != nil {
		ra, rb := *a.TargetRef, *b.TargetRef
		ra.ResourceVersion, rb.ResourceVersion = "", ""
		if ra != rb {
			return false
		}
	}
	return true
}

// EndpointSet is an insertion-ordered set of endpoints keyed by
// EndpointKey, so that plans are deterministic.
type EndpointSet struct {
	order []string
	items map[string]*discoveryv1.Endpoint
}

// NewEndpointSet is an empty set.
func NewEndpointSet() *EndpointSet { return &EndpointSet{items: map[string]*discoveryv1.Endpoint{}} }

// Insert adds ep, replacing an endpoint with the same key in place.
func (s *EndpointSet) Insert(ep discoveryv1.Endpoint) {
	k := EndpointKey(&ep)
	if _, ok := s.items[k]; !ok {
		s.order = append(s.order, k)
	}
	s.items[k] = &ep
}

// Get is the endpoint with ep's key, or nil.
func (s *EndpointSet) Get(ep *discoveryv1.Endpoint) *discoveryv1.Endpoint {
	return s.items[EndpointKey(ep)]
}

// Remove drops the endpoint with ep's key.
func (s *EndpointSet) Remove(ep *discoveryv1.Endpoint) { delete(s.items, EndpointKey(ep)) }

// Len is how many endpoints the set holds.
func (s *EndpointSet) Len() int { return len(s.items) }

// Pop removes and returns the earliest inserted endpoint still present.
func (s *EndpointSet) Pop() *discoveryv1.Endpoint {
	for len(s.order) > 0 {
		k := s.order[0]
		s.order = s.order[1:]
		if ep, ok := s.items[k]; ok {
			delete(s.items, k)
			return ep
		}
	}
	return nil
}

// ManagedSliceInformer is f's informer of the EndpointSlices labelled
// endpointslice.kubernetes.io/managed-by=managedBy, indexed by namespace:
// a controller writing slices watches only its own. A slice losing the
// label is a deletion to it.
func ManagedSliceInformer(f informers.SharedInformerFactory, managedBy string) cache.SharedIndexInformer {
	return f.InformerFor(&discoveryv1.EndpointSlice{}, func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return discoveryinformers.NewFilteredEndpointSliceInformer(cs, metav1.NamespaceAll, resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, func(o *metav1.ListOptions) {
				o.LabelSelector = discoveryv1.LabelManagedBy + "=" + managedBy
			})
	})
}
