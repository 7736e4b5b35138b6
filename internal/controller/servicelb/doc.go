// Package servicelb is plainkube's load balancer for machines without a
// cloud: a Service of type LoadBalancer (without a loadBalancerClass) is
// served on the nodes themselves, as k3s's ServiceLB does. The controller
// sets the Service's status.loadBalancer.ingress to the addresses of the
// ready nodes (InternalIP, else ExternalIP; simulated nodes are left
// out); the service proxy on every node then answers on those addresses
// and the Service's ports as it does for externalIPs.
//
// Two Services cannot both hold a port on the same addresses: the older
// one keeps it (by creation time, then name) and the other stays pending,
// with no ingress, until the port is free. plan (plan.go: plan(State) Plan) is the pure
// core: Services and Nodes in, the ingress each Service should show out.
package servicelb
