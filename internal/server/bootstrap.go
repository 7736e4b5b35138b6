package server

import (
	"context"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/registry/scheduling"
)

// SystemNamespaces exist in every cluster.
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// bootstrap creates, through the API, what every cluster has: the system
// namespaces, the built-in PriorityClasses (system-node-critical and
// system-cluster-critical), the `kubernetes` Service in default, whose
// endpoints point at this API server, and (clusterDNS not "") the kube-dns Service in
// kube-system at that address, and upstream's API Priority and Fairness
// configuration (see ensureFlowControl). It is idempotent. A seeded
// store (bootstrapSeed) holds the namespaces, priority classes and flow
// control objects already: those are not made again.
func bootstrap(ctx context.Context, cfg *rest.Config, serviceIP, hostIP string, port int, clusterDNS string, seeded bool) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if !seeded { // the seed holds these (bootstrapSeed)
		if err := ensureSystemObjects(ctx, cs); err != nil {
			return err
		}
	}
	return ensureServices(ctx, cs, serviceIP, hostIP, port, clusterDNS)
}

// ensureSystemObjects makes the system namespaces and priority classes and
// API Priority and Fairness' configuration.
func ensureSystemObjects(ctx context.Context, cs kubernetes.Interface) error {
	for _, ns := range SystemNamespaces {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	for _, pc := range scheduling.SystemPriorityClasses() {
		_, err := cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("priority class %s: %w", pc.Name, err)
		}
	}
	return ensureFlowControl(ctx, cs)
}

// ensureServices makes the kubernetes Service (and its endpoints) and the
// cluster DNS Service.
func ensureServices(ctx context.Context, cs kubernetes.Interface, serviceIP, hostIP string, port int, clusterDNS string) error {
	labels := map[string]string{"component": "apiserver", "provider": "kubernetes"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", Labels: labels},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: serviceIP,
			Ports:     []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(int32(port))}},
		},
	}
	if err := ensureService(ctx, cs, svc); err != nil {
		return err
	}
	if clusterDNS != "" {
		// Cluster DNS: every node answers at its own address, behind this
		// Service, through an EndpointSlice the node keeps (package dns).
		dnsSvc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system",
				Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS", "kubernetes.io/cluster-service": "true"}},
			Spec: corev1.ServiceSpec{
				Type:      corev1.ServiceTypeClusterIP,
				ClusterIP: clusterDNS,
				Ports: []corev1.ServicePort{
					{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
					{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				},
				// Each node's pods ask their own node's answerer.
				TrafficDistribution: ptr.To(corev1.ServiceTrafficDistributionPreferSameNode),
			},
		}
		if err := ensureService(ctx, cs, dnsSvc); err != nil {
			return err
		}
	}
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: hostIP}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}},
		}},
	}
	if err := createOrUpdate(ctx, func() error {
		_, err := cs.CoreV1().Endpoints("default").Create(ctx, ep, metav1.CreateOptions{})
		return err
	}, func() error {
		cur, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Subsets = ep.Subsets
		_, err = cs.CoreV1().Endpoints("default").Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("endpoints kubernetes: %w", err)
	}
	if net.ParseIP(hostIP).IsLoopback() {
		return nil // EndpointSlices may not hold loopback addresses
	}
	ready := true
	portName, proto, p := "https", corev1.ProtocolTCP, int32(port)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes", discoveryv1.LabelManagedBy: "plainkube-apiserver"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Protocol: &proto, Port: &p}},
	}
	return createOrUpdate(ctx, func() error {
		_, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{})
		return err
	}, func() error {
		cur, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Endpoints, cur.Ports = slice.Endpoints, slice.Ports
		_, err = cs.DiscoveryV1().EndpointSlices("default").Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// ensureService creates svc unless a Service of its name exists. It gets
// first: a create of an existing Service fails on its cluster IP (already
// allocated) before it could fail on its name.
func ensureService(ctx context.Context, cs kubernetes.Interface, svc *corev1.Service) error {
	_, err := cs.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

func createOrUpdate(ctx context.Context, create, update func() error) error {
	err := create()
	if apierrors.IsAlreadyExists(err) {
		return update()
	}
	return err
}

// ensureLocalPathClass creates the built-in default StorageClass
// local-path (the local-path provisioner's) if it is absent: one changed
// by hand stays as it is, one deleted comes back at the next start.
func ensureLocalPathClass(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.StorageV1().StorageClasses().Create(ctx, localpath.StorageClass(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("storage class %s: %w", localpath.StorageClassName, err)
	}
	return nil
}
