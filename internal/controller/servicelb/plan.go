package servicelb

import (
	"cmp"
	"slices"

	"plainkube.dev/plainkube/internal/api/nodeutil"

	corev1 "k8s.io/api/core/v1"
)

// SimulatedLabel marks simulated nodes, which serve no traffic.
const SimulatedLabel = "plainkube.dev/simulated"

// Managed says whether the controller serves svc: a LoadBalancer Service
// without a loadBalancerClass of another implementation's.
func Managed(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil
}

// State is what plan decides from: every Service and Node, from the
// informer caches.
type State struct {
	Services []*corev1.Service
	Nodes    []*corev1.Node
}

// Plan is the ingress each managed Service (by namespace/name) should
// show. Services the controller does not manage are left out.
type Plan map[string][]corev1.LoadBalancerIngress

// plan says which ingress each managed Service should show, given all
// Services and Nodes.
func plan(s State) Plan {
	services, nodes := s.Services, s.Nodes
	var ingress []corev1.LoadBalancerIngress
	for _, n := range nodes {
		if n.Labels[SimulatedLabel] == "true" || !nodeutil.IsReady(n) {
			continue
		}
		if ip := nodeAddress(n); ip != "" {
			ingress = append(ingress, corev1.LoadBalancerIngress{IP: ip, IPMode: ptrTo(corev1.LoadBalancerIPModeVIP)})
		}
	}
	slices.SortFunc(ingress, func(a, b corev1.LoadBalancerIngress) int { return cmp.Compare(a.IP, b.IP) })
	managed := slices.DeleteFunc(slices.Clone(services), func(s *corev1.Service) bool { return !Managed(s) || s.DeletionTimestamp != nil })
	slices.SortFunc(managed, func(a, b *corev1.Service) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	type port struct {
		proto corev1.Protocol
		port  int32
	}
	held := map[port]bool{}
	out := map[string][]corev1.LoadBalancerIngress{}
	for _, s := range managed {
		key := s.Namespace + "/" + s.Name
		free := true
		for _, p := range s.Spec.Ports {
			free = free && !held[port{p.Protocol, p.Port}]
		}
		if !free || len(ingress) == 0 {
			out[key] = nil
			continue
		}
		for _, p := range s.Spec.Ports {
			held[port{p.Protocol, p.Port}] = true
		}
		out[key] = ingress
	}
	return out
}

func nodeAddress(n *corev1.Node) string {
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, a := range n.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
	}
	return ""
}

func ptrTo[T any](v T) *T { return &v }
