package webhook

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// EndpointResolver resolves a Service's port to one of its ready
// endpoints, from informers over Services and EndpointSlices (upstream's
// endpoint service resolver): the API server reaches a webhook's pod
// directly, without the service proxy.
type EndpointResolver struct {
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	synced   []cache.InformerSynced
}

// NewEndpointResolver reads Services and EndpointSlices from f's
// informers (start f after).
func NewEndpointResolver(f informers.SharedInformerFactory) *EndpointResolver {
	svc, eps := f.Core().V1().Services(), f.Discovery().V1().EndpointSlices()
	return &EndpointResolver{services: svc.Lister(), slices: eps.Lister(),
		synced: []cache.InformerSynced{svc.Informer().HasSynced, eps.Informer().HasSynced}}
}

// HasSynced reports whether both informers have their first list.
func (r *EndpointResolver) HasSynced() bool {
	for _, s := range r.synced {
		if !s() {
			return false
		}
	}
	return true
}

// ResolveEndpoint returns the address of a ready endpoint serving port of
// the Service namespace/name, chosen at random among the ready ones; an
// ExternalName Service resolves to its name.
func (r *EndpointResolver) ResolveEndpoint(namespace, name string, port int32) (string, error) {
	svc, err := r.services.Services(namespace).Get(name)
	if err != nil {
		return "", err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port))), nil
	}
	var svcPort *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			svcPort = &svc.Spec.Ports[i]
			break
		}
	}
	if svcPort == nil {
		return "", fmt.Errorf("no service port %d found for service %q", port, name)
	}
	slices, err := r.slices.EndpointSlices(namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name}))
	if err != nil {
		return "", err
	}
	var ready []string
	for _, s := range slices {
		if s.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		target, ok := slicePort(s, svcPort)
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
				continue
			}
			ready = append(ready, net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(target))))
		}
	}
	if len(ready) == 0 {
		return "", fmt.Errorf("no endpoints available for service %q", name)
	}
	return ready[rand.IntN(len(ready))], nil
}

// slicePort is the port number a slice gives the Service port sp (matched
// by name, as the endpointslice controller names them).
func slicePort(s *discoveryv1.EndpointSlice, sp *corev1.ServicePort) (int32, bool) {
	for _, p := range s.Ports {
		if p.Port == nil || ptrValue(p.Name) != sp.Name {
			continue
		}
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		return *p.Port, true
	}
	return 0, false
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
