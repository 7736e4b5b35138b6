package dns

import (
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/reconcile"
)

// The index is what the server answers from: a small copy of each Service
// and EndpointSlice, keyed for the lookups a query makes, kept up to date
// by the informers' event handlers. A query never lists anything: it finds
// a Service by "<name>.<namespace>", its EndpointSlices through the same
// key, and a PTR's objects by IP.

// port is a Service or EndpointSlice port. A Service or slice without
// ports has one with number -1 (no SRV record), as CoreDNS has, so that
// its addresses are still answered.
type port struct {
	name  string
	proto string // lower case: tcp, udp, sctp
	num   int32
}

var noPorts = []port{{num: -1}}

// service is what DNS needs of a Service.
type service struct {
	name, namespace string
	// external is set for an ExternalName Service, and externalName is
	// its CNAME target (fully qualified), "" when it is an IP address
	// (CoreDNS serves no record for those).
	external     bool
	externalName string
	headless     bool
	clusterIPs   []netip.Addr
	ports        []port
	// publishNotReady serves not-ready endpoints too.
	publishNotReady bool
}

// endpoint is one address of an EndpointSlice endpoint.
type endpoint struct {
	addr     netip.Addr
	hostname string // spec hostname, lower case ("" when none)
	ready    bool
}

// slice is what DNS needs of an EndpointSlice.
type slice struct {
	svcKey string // "<service>.<namespace>" from kubernetes.io/service-name
	ports  []port
	eps    []endpoint
}

// reverse lists what has an IP address: the Services with that cluster
// IP and the slices with an endpoint of that address.
type reverse struct {
	services []string // service keys
	slices   []string // slice keys
}

type index struct {
	mu       sync.RWMutex
	services map[string]*service // by "<name>.<namespace>"
	slices   map[string]*slice   // by "<namespace>/<name>"
	// bySvc lists a Service's slices (keyed as slices) by service key.
	bySvc map[string]map[string]*slice
	ptr   map[netip.Addr]*reverse
	// namespaces counts the Services and slices of each namespace: a
	// namespace is taken to exist while it has some.
	namespaces map[string]int
	// modified is when the index last changed (Unix seconds): the SOA
	// serial, as CoreDNS's.
	modified int64
	// generation counts the changes: answers made at one generation
	// hold until the next.
	generation atomic.Uint64
	now        func() time.Time
}

func newIndex() *index {
	return &index{
		services:   map[string]*service{},
		slices:     map[string]*slice{},
		bySvc:      map[string]map[string]*slice{},
		ptr:        map[netip.Addr]*reverse{},
		namespaces: map[string]int{},
		now:        time.Now,
	}
}

func serviceKey(name, namespace string) string { return name + "." + namespace }

// toService converts svc; nil for objects DNS cannot serve.
func toService(svc *corev1.Service) *service {
	s := &service{name: strings.ToLower(svc.Name), namespace: strings.ToLower(svc.Namespace),
		publishNotReady: svc.Spec.PublishNotReadyAddresses}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		s.external = true
		target := strings.ToLower(strings.TrimSpace(svc.Spec.ExternalName))
		if _, err := netip.ParseAddr(target); err != nil && validName(target) {
			s.externalName = fqdn(target)
		}
		return s
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 {
		ips = []string{svc.Spec.ClusterIP}
	}
	if ips[0] == corev1.ClusterIPNone {
		s.headless = true
	} else {
		for _, ip := range ips {
			if a, err := netip.ParseAddr(ip); err == nil {
				s.clusterIPs = append(s.clusterIPs, a.Unmap())
			}
		}
	}
	for _, p := range svc.Spec.Ports {
		s.ports = append(s.ports, port{name: strings.ToLower(p.Name), proto: strings.ToLower(string(p.Protocol)), num: p.Port})
	}
	if len(s.ports) == 0 {
		s.ports = noPorts
	}
	return s
}

// toSlice converts es; nil when it belongs to no Service.
func toSlice(es *discoveryv1.EndpointSlice) *slice {
	name := es.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	sl := &slice{svcKey: serviceKey(strings.ToLower(name), strings.ToLower(es.Namespace))}
	for _, p := range es.Ports {
		np := port{num: -1}
		if p.Name != nil {
			np.name = strings.ToLower(*p.Name)
		}
		if p.Protocol != nil {
			np.proto = strings.ToLower(string(*p.Protocol))
		}
		if p.Port != nil {
			np.num = *p.Port
		}
		sl.ports = append(sl.ports, np)
	}
	if len(sl.ports) == 0 {
		sl.ports = noPorts
	}
	seen := map[netip.Addr]bool{}
	for _, e := range es.Endpoints {
		// A nil ready condition is unknown, to be taken as ready.
		ready := e.Conditions.Ready == nil || *e.Conditions.Ready
		host := ""
		if e.Hostname != nil {
			host = strings.ToLower(*e.Hostname)
		}
		for _, a := range e.Addresses {
			addr, err := netip.ParseAddr(a)
			if err != nil || seen[addr.Unmap()] {
				continue
			}
			addr = addr.Unmap()
			seen[addr] = true
			sl.eps = append(sl.eps, endpoint{addr: addr, hostname: host, ready: ready})
		}
	}
	return sl
}

func (ix *index) touch() {
	ix.modified = ix.now().Unix()
	ix.generation.Add(1)
}

func (ix *index) countNamespace(ns string, d int) {
	if ix.namespaces[ns] += d; ix.namespaces[ns] <= 0 {
		delete(ix.namespaces, ns)
	}
}

// setService adds or replaces the Service key.
func (ix *index) setService(key string, s *service) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old := ix.services[key]; old != nil {
		for _, ip := range old.clusterIPs {
			ix.unlinkService(ip, key)
		}
	} else {
		ix.countNamespace(s.namespace, 1)
	}
	ix.services[key] = s
	for _, ip := range s.clusterIPs {
		r := ix.ptr[ip]
		if r == nil {
			r = &reverse{}
			ix.ptr[ip] = r
		}
		if !slices.Contains(r.services, key) {
			r.services = append(r.services, key)
			slices.Sort(r.services)
		}
	}
	ix.touch()
}

func (ix *index) deleteService(key string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	old := ix.services[key]
	if old == nil {
		return
	}
	for _, ip := range old.clusterIPs {
		ix.unlinkService(ip, key)
	}
	delete(ix.services, key)
	ix.countNamespace(old.namespace, -1)
	ix.touch()
}

func (ix *index) unlinkService(ip netip.Addr, key string) {
	if r := ix.ptr[ip]; r != nil {
		r.services = slices.DeleteFunc(r.services, func(k string) bool { return k == key })
		ix.dropEmpty(ip, r)
	}
}

func (ix *index) unlinkSlice(ip netip.Addr, key string) {
	if r := ix.ptr[ip]; r != nil {
		r.slices = slices.DeleteFunc(r.slices, func(k string) bool { return k == key })
		ix.dropEmpty(ip, r)
	}
}

func (ix *index) dropEmpty(ip netip.Addr, r *reverse) {
	if len(r.services) == 0 && len(r.slices) == 0 {
		delete(ix.ptr, ip)
	}
}

// setSlice adds or replaces the slice key (nil sl deletes it).
func (ix *index) setSlice(key, namespace string, sl *slice) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old := ix.slices[key]; old != nil {
		ix.removeSlice(key, namespace, old)
	} else if sl == nil {
		return
	}
	if sl != nil {
		ix.slices[key] = sl
		bs := ix.bySvc[sl.svcKey]
		if bs == nil {
			bs = map[string]*slice{}
			ix.bySvc[sl.svcKey] = bs
		}
		bs[key] = sl
		for _, e := range sl.eps {
			r := ix.ptr[e.addr]
			if r == nil {
				r = &reverse{}
				ix.ptr[e.addr] = r
			}
			if !slices.Contains(r.slices, key) {
				r.slices = append(r.slices, key)
				slices.Sort(r.slices)
			}
		}
		ix.countNamespace(namespace, 1)
	}
	ix.touch()
}

func (ix *index) removeSlice(key, namespace string, old *slice) {
	for _, e := range old.eps {
		ix.unlinkSlice(e.addr, key)
	}
	if bs := ix.bySvc[old.svcKey]; bs != nil {
		delete(bs, key)
		if len(bs) == 0 {
			delete(ix.bySvc, old.svcKey)
		}
	}
	delete(ix.slices, key)
	ix.countNamespace(namespace, -1)
}

// Event handlers.

func (ix *index) onService(obj any) {
	if svc, ok := obj.(*corev1.Service); ok {
		ix.setService(serviceKey(strings.ToLower(svc.Name), strings.ToLower(svc.Namespace)), toService(svc))
	}
}

func (ix *index) onServiceDelete(obj any) {
	if svc, ok := reconcile.DeletedObject[*corev1.Service](obj); ok {
		ix.deleteService(serviceKey(strings.ToLower(svc.Name), strings.ToLower(svc.Namespace)))
	}
}

func (ix *index) onSlice(obj any) {
	if es, ok := obj.(*discoveryv1.EndpointSlice); ok {
		ix.setSlice(es.Namespace+"/"+es.Name, es.Namespace, toSlice(es))
	}
}

func (ix *index) onSliceDelete(obj any) {
	if es, ok := reconcile.DeletedObject[*discoveryv1.EndpointSlice](obj); ok {
		ix.setSlice(es.Namespace+"/"+es.Name, es.Namespace, nil)
	}
}

func (ix *index) handlers() (svc, slices cache.ResourceEventHandlerFuncs) {
	return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { ix.onService(obj) },
			UpdateFunc: func(_, obj any) { ix.onService(obj) },
			DeleteFunc: ix.onServiceDelete,
		}, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { ix.onSlice(obj) },
			UpdateFunc: func(_, obj any) { ix.onSlice(obj) },
			DeleteFunc: ix.onSliceDelete,
		}
}

// serves reports whether e is answered for s (a nil s: the slice's
// Service is unknown, ready endpoints only).
func serves(s *service, e endpoint) bool {
	return e.ready || (s != nil && s.publishNotReady)
}

// endpointHostname is the name of e under its Service: its hostname, or
// its address with dashes, as CoreDNS names them.
func endpointHostname(e endpoint) string {
	if e.hostname != "" {
		return e.hostname
	}
	if e.addr.Is4() {
		return strings.ReplaceAll(e.addr.String(), ".", "-")
	}
	h := strings.ReplaceAll(e.addr.String(), ":", "-")
	if strings.HasSuffix(h, "-") {
		h += "0"
	}
	return h
}

// validName reports whether s is a domain name a record can hold.
func validName(s string) bool {
	_, ok := mdns.IsDomainName(s)
	return ok && s != "" && s != "."
}

func fqdn(s string) string {
	if strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}
