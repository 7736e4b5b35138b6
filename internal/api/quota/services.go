package quota

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var serviceResources = []corev1.ResourceName{
	ObjectCountName(schema.GroupResource{Resource: "services"}),
	corev1.ResourceServices, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

type services struct{}

func (services) GroupResource() schema.GroupResource {
	return schema.GroupResource{Resource: "services"}
}

// Handles: creates and updates (a type change moves node ports and load
// balancers).
func (services) Handles(op, subresource string, _, _ runtime.Object) bool {
	return subresource == "" && (op == Create || op == Update)
}

func (services) MatchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	return intersect(names, serviceResources)
}

func (services) MatchesScope(corev1.ScopedResourceSelectorRequirement, runtime.Object) (bool, error) {
	return false, nil
}

func (services) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

// Usage: one service; a NodePort or LoadBalancer one uses a node port per
// port (a LoadBalancer without node ports only those it has), a
// LoadBalancer one a load balancer.
func (services) Usage(obj runtime.Object, _ time.Time) (corev1.ResourceList, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, fmt.Errorf("expect *v1.Service, got %T", obj)
	}
	ports := int64(len(svc.Spec.Ports))
	out := corev1.ResourceList{
		serviceResources[0]:                  one(),
		corev1.ResourceServices:              one(),
		corev1.ResourceServicesLoadBalancers: *resource.NewQuantity(0, resource.DecimalSI),
		corev1.ResourceServicesNodePorts:     *resource.NewQuantity(0, resource.DecimalSI),
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	case corev1.ServiceTypeLoadBalancer:
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
			n := int64(0)
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					n++
				}
			}
			ports = n
		}
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
		out[corev1.ResourceServicesLoadBalancers] = one()
	}
	return out, nil
}
