package endpoints

import (
	"maps"
	"math"
	"net/netip"
	"strings"
	"time"

	"plainkube.dev/plainkube/internal/api/podutil"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/controller/endpointutil"
)

// MaxCapacity is the most addresses (ready and not) one Endpoints object
// holds; beyond it the object is truncated and annotated, as upstream.
const MaxCapacity = 1000

// overCapacityValue is the value of the endpoints.kubernetes.io/over-capacity
// annotation on a truncated Endpoints object.
const overCapacityValue = "truncated"

// Subsets lists the pods (those matching the Service's selector) as
// Endpoints subsets, as upstream's endpoint controller: a pod with an IP of
// the Service's family that has not finished, and is not terminating unless
// the Service publishes not-ready addresses, appears once per Service port
// it resolves (a named targetPort it lacks is skipped), as a ready address
// if it is Ready or the Service publishes not-ready addresses, else as a
// not-ready address. A headless Service without ports lists addresses with
// no ports. The result is packed into canonical form (see endpointutil.Repack).
func Subsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	var subsets []corev1.EndpointSubset
	tolerateUnready := svc.Spec.PublishNotReadyAddresses
	for _, pod := range pods {
		if !endpointutil.ShouldPodBeInEndpoints(pod, tolerateUnready) {
			continue
		}
		addr, ok := podAddress(svc, pod)
		if !ok {
			continue
		}
		add := func(ports []corev1.EndpointPort) {
			if tolerateUnready || podutil.IsReady(pod) {
				subsets = append(subsets, corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{addr}, Ports: ports})
			} else {
				subsets = append(subsets, corev1.EndpointSubset{NotReadyAddresses: []corev1.EndpointAddress{addr}, Ports: ports})
			}
		}
		if len(svc.Spec.Ports) == 0 {
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				add(nil)
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			n, err := endpointutil.FindPort(pod, sp)
			if err != nil {
				continue
			}
			proto := sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			add([]corev1.EndpointPort{{Name: sp.Name, Port: n, Protocol: proto, AppProtocol: sp.AppProtocol}})
		}
	}
	return endpointutil.Repack(subsets)
}

// podAddress is the pod's address for the Service: its IP of the Service's
// (first) IP family, with node name and a reference to the pod.
func podAddress(svc *corev1.Service, pod *corev1.Pod) (corev1.EndpointAddress, bool) {
	ips := endpointutil.PodIPs(pod)
	if len(ips) == 0 {
		return corev1.EndpointAddress{}, false
	}
	want6 := false
	switch {
	case len(svc.Spec.IPFamilies) > 0:
		want6 = svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	case endpointutil.IsServiceIPSet(svc):
		want6 = strings.Contains(svc.Spec.ClusterIP, ":")
	default:
		want6 = ips[0].Is6()
	}
	var ip netip.Addr
	for _, a := range ips {
		if a.Is6() == want6 {
			ip = a
			break
		}
	}
	if !ip.IsValid() {
		return corev1.EndpointAddress{}, false
	}
	addr := corev1.EndpointAddress{
		IP:        ip.String(),
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		node := pod.Spec.NodeName
		addr.NodeName = &node
	}
	if endpointutil.ShouldSetHostname(pod, svc) {
		addr.Hostname = pod.Spec.Hostname
	}
	return addr, true
}

// Truncate cuts subsets down to MaxCapacity addresses, as upstream: ready
// addresses are kept before not-ready ones, and each subset keeps a share
// proportional to its size. It reports whether anything was cut.
func Truncate(subsets []corev1.EndpointSubset) bool {
	ready, notReady := 0, 0
	for _, s := range subsets {
		ready += len(s.Addresses)
		notReady += len(s.NotReadyAddresses)
	}
	if ready+notReady <= MaxCapacity {
		return false
	}
	truncateReady := ready > MaxCapacity
	max, total := MaxCapacity-ready, notReady
	if truncateReady {
		max, total = MaxCapacity, ready
	}
	left := max
	for i := range subsets {
		s := &subsets[i]
		n := len(s.NotReadyAddresses)
		if truncateReady {
			n = len(s.Addresses)
		}
		share := min(int(math.Ceil(float64(n)/float64(total)*float64(max))), left)
		if truncateReady {
			s.Addresses = s.Addresses[:min(share, len(s.Addresses))]
			s.NotReadyAddresses = nil
			left -= len(s.Addresses)
		} else {
			s.NotReadyAddresses = s.NotReadyAddresses[:min(share, len(s.NotReadyAddresses))]
			left -= len(s.NotReadyAddresses)
		}
	}
	return true
}

// State is what one look at a Service sees: the Service (nil: gone), its pods,
// its Endpoints object (nil if none; Stale: the cache still shows the
// version this controller replaced), and the change-trigger time.
type State struct {
	Namespace, Name string
	Service         *corev1.Service
	Pods            []*corev1.Pod
	Current         *corev1.Endpoints
	Stale           bool
	Trigger         time.Time
}

// Plan is what one look does: delete the Endpoints of a Service gone, wait
// for the cache, or write Write (create it when there is none).
type Plan struct {
	Delete, Wait bool
	Write        *corev1.Endpoints
}

// plan keeps a Service's Endpoints object as Desired says. Services
// without a selector get theirs from elsewhere (the API server for
// "kubernetes", or their users); ExternalName Services have none.
func plan(st State) Plan {
	switch {
	case st.Service == nil:
		// Deleted whether or not the cache shows the Endpoints yet (this
		// controller may have just written them), as upstream.
		return Plan{Delete: true}
	case !selectsPods(st.Service):
		return Plan{}
	case st.Stale:
		return Plan{Wait: true}
	}
	if want, write := Desired(st.Service, st.Pods, st.Current, st.Trigger); write {
		return Plan{Write: want}
	}
	return Plan{}
}

// selectsPods: the controller manages the Service's Endpoints.
func selectsPods(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.Selector != nil
}

// Desired is the Endpoints object svc should have given its pods, built on
// current (nil if there is none), and whether it has to be written: when
// there is none yet, or its subsets, labels (the Service's, plus the
// headless marker) or over-capacity annotation differ. The
// last-change-trigger-time annotation is set from trigger (zero drops it)
// on a write, and never causes one by itself.
func Desired(svc *corev1.Service, pods []*corev1.Pod, current *corev1.Endpoints, trigger time.Time) (*corev1.Endpoints, bool) {
	subsets := Subsets(svc, pods)
	truncated := Truncate(subsets)

	labels := maps.Clone(svc.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if endpointutil.IsServiceIPSet(svc) {
		delete(labels, corev1.IsHeadlessService)
	} else {
		labels[corev1.IsHeadlessService] = ""
	}

	var want *corev1.Endpoints
	if current == nil {
		want = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name}}
	} else {
		_, wasTruncated := current.Annotations[corev1.EndpointsOverCapacity]
		if subsetsEqual(current.Subsets, subsets) && maps.Equal(current.Labels, labels) && wasTruncated == truncated {
			return current, false
		}
		want = current.DeepCopy()
	}
	want.Subsets = subsets
	want.Labels = labels
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	if trigger.IsZero() {
		delete(want.Annotations, corev1.EndpointsLastChangeTriggerTime)
	} else {
		want.Annotations[corev1.EndpointsLastChangeTriggerTime] = trigger.UTC().Format(time.RFC3339Nano)
	}
	if truncated {
		want.Annotations[corev1.EndpointsOverCapacity] = overCapacityValue
	} else {
		delete(want.Annotations, corev1.EndpointsOverCapacity)
	}
	return want, true
}

// subsetsEqual compares subsets semantically (nil and empty lists are the
// same), ignoring the target pods' resourceVersions.
func subsetsEqual(a, b []corev1.EndpointSubset) bool {
	strip := func(in []corev1.EndpointSubset) []corev1.EndpointSubset {
		out := make([]corev1.EndpointSubset, len(in))
		for i := range in {
			s := *in[i].DeepCopy()
			for _, list := range [][]corev1.EndpointAddress{s.Addresses, s.NotReadyAddresses} {
				for j := range list {
					if list[j].TargetRef != nil {
						list[j].TargetRef.ResourceVersion = ""
					}
				}
			}
			out[i] = s
		}
		return out
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}
