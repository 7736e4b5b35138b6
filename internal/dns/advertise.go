package dns

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// AdvertiseNamespace and ServiceName are the Service a node's DNS
	// server is an endpoint of.
	AdvertiseNamespace = "kube-system"
	ServiceName        = "kube-dns"
	// ManagedBy is the endpointslice.kubernetes.io/managed-by value of
	// the slices Advertise keeps (the EndpointSlice controller leaves
	// them alone).
	ManagedBy = "dns.plainkube.dev"
)

// advertiseInterval is how often Advertise asserts its slice (a variable
// for the tests).
var advertiseInterval = 30 * time.Second

// SliceName is the name of the EndpointSlice Advertise keeps for node.
func SliceName(nodeName string) string { return ServiceName + "-" + nodeName }

// Advertise makes the DNS server at ip:port an endpoint of the kube-dns
// Service: it keeps the EndpointSlice kube-system/kube-dns-<nodeName>
// (one ready endpoint, ip on nodeName, hinted for that node; ports dns/UDP
// and dns-tcp/TCP), creating or updating it now and every 30 seconds (in
// case it was deleted or changed), until ctx ends; then it deletes it
// (best effort) and returns nil. Call it once the server is Ready.
func Advertise(ctx context.Context, cs kubernetes.Interface, nodeName, ip string, port int32, log *slog.Logger) error {
	want, err := advertisedSlice(nodeName, ip, port)
	if err != nil {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("namespace", want.Namespace, "name", want.Name)
	t := time.NewTicker(advertiseInterval)
	defer t.Stop()
	for {
		if err := ensureSlice(ctx, cs, want); err != nil && ctx.Err() == nil {
			log.Warn("advertising the cluster DNS server", "err", err)
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := cs.DiscoveryV1().EndpointSlices(want.Namespace).Delete(dctx, want.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				log.Warn("withdrawing the cluster DNS server's EndpointSlice", "err", err)
			}
			return nil
		case <-t.C:
		}
	}
}

// advertisedSlice is the EndpointSlice Advertise keeps.
func advertisedSlice(nodeName, ip string, port int32) (*discoveryv1.EndpointSlice, error) {
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Zone() != "" {
		return nil, fmt.Errorf("advertising the cluster DNS server: %q is not an IP address", ip)
	}
	if nodeName == "" {
		return nil, fmt.Errorf("advertising the cluster DNS server: no node name")
	}
	a = a.Unmap()
	family := discoveryv1.AddressTypeIPv4
	if a.Is6() {
		family = discoveryv1.AddressTypeIPv6
	}
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	dnsName, tcpName := "dns", "dns-tcp"
	yes, no := true, false
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      SliceName(nodeName),
			Namespace: AdvertiseNamespace,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: ServiceName,
				discoveryv1.LabelManagedBy:   ManagedBy,
			},
		},
		AddressType: family,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{a.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &yes, Serving: &yes, Terminating: &no},
			NodeName:   &nodeName,
			Hints:      &discoveryv1.EndpointHints{ForNodes: []discoveryv1.ForNode{{Name: nodeName}}},
		}},
		Ports: []discoveryv1.EndpointPort{
			{Name: &dnsName, Protocol: &udp, Port: &port},
			{Name: &tcpName, Protocol: &tcp, Port: &port},
		},
	}, nil
}

// ensureSlice creates want, or updates the slice of its name when it
// differs.
func ensureSlice(ctx context.Context, cs kubernetes.Interface, want *discoveryv1.EndpointSlice) error {
	c := cs.DiscoveryV1().EndpointSlices(want.Namespace)
	cur, err := c.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = c.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if cur.AddressType == want.AddressType && apiequality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) &&
		apiequality.Semantic.DeepEqual(cur.Ports, want.Ports) && hasLabels(cur.Labels, want.Labels) {
		return nil
	}
	if cur.AddressType != want.AddressType {
		// The address type cannot change: make the slice anew.
		if err := c.Delete(ctx, want.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		_, err = c.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	upd := cur.DeepCopy()
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		upd.Labels[k] = v
	}
	upd.Endpoints, upd.Ports = want.Endpoints, want.Ports
	_, err = c.Update(ctx, upd, metav1.UpdateOptions{})
	return err
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
