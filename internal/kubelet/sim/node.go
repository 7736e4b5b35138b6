package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/kubelet/nodestatus"
	"plainkube.dev/plainkube/internal/version"
)

// LeaseNamespace holds the nodes' heartbeat Leases.
const LeaseNamespace = corev1.NamespaceNodeLease

const kubeletPort = 10250

var (
	podCIDRBase = netip.MustParseAddr("10.42.0.0")
	nodeIPBase  = netip.MustParseAddr("172.16.0.0")
)

// nodeName is the name of node i.
func (o *Options) nodeName(i int) string { return o.NamePrefix + strconv.Itoa(i) }

// podCIDR is node i's pod range: 10.42.0.0/24, 10.42.1.0/24, … continuing
// into 10.43.0.0/24 after the 256th node.
func podCIDR(i int) netip.Prefix {
	return netip.PrefixFrom(addV4(podCIDRBase, uint32(i)<<8), 24)
}

// nodeIP is node i's InternalIP, from 172.16.0.0/12.
func nodeIP(i int) netip.Addr { return addV4(nodeIPBase, uint32(i)+1) }

func addV4(a netip.Addr, n uint32) netip.Addr {
	b := a.As4()
	v := binary.BigEndian.Uint32(b[:]) + n
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// node is node i as it registers: labels, pod CIDR, capacity, addresses,
// node info and Ready conditions.
func (o *Options) node(i int, now time.Time) *corev1.Node {
	name := o.nodeName(i)
	labels := map[string]string{
		LabelSimulated:                 "true",
		corev1.LabelHostname:           name,
		corev1.LabelOSStable:           "linux",
		corev1.LabelArchStable:         o.Arch,
		"beta.kubernetes.io/os":        "linux",
		"beta.kubernetes.io/arch":      o.Arch,
		corev1.LabelTopologyZone:       o.Zones[i%len(o.Zones)],
		corev1.LabelInstanceTypeStable: o.instanceType,
	}
	maps.Copy(labels, o.Labels)
	cidr := podCIDR(i).String()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              o.CPU.DeepCopy(),
		corev1.ResourceMemory:           o.Memory.DeepCopy(),
		corev1.ResourcePods:             *resource.NewQuantity(int64(o.Pods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:    cidr,
			PodCIDRs:   []string{cidr},
			ProviderID: "sim://" + name,
			Taints:     append([]corev1.Taint(nil), o.Taints...),
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Conditions:  nodestatus.HealthyConditions(nil, now),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: nodeIP(i).String()},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: kubeletPort}},
			NodeInfo:        o.nodeInfo(name),
		},
	}
}

func (o *Options) nodeInfo(name string) corev1.NodeSystemInfo {
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:16])
	return corev1.NodeSystemInfo{
		MachineID:               id,
		SystemUUID:              fmt.Sprintf("%s-%s-%s-%s-%s", id[0:8], id[8:12], id[12:16], id[16:20], id[20:32]),
		BootID:                  hex.EncodeToString(sum[16:]),
		KernelVersion:           "6.12.0-sim",
		OSImage:                 "plainkube simulated node",
		ContainerRuntimeVersion: RuntimeVersion,
		KubeletVersion:          version.GitVersion(),
		OperatingSystem:         "linux",
		Architecture:            o.Arch,
	}
}

// leaseDuration is four heartbeats, as upstream's 40s for 10s renewals.
func leaseDuration(heartbeat time.Duration) int32 {
	return int32(max(1, math.Ceil(4*heartbeat.Seconds())))
}

// lease is node's heartbeat Lease renewed at now.
func lease(node *corev1.Node, heartbeat time.Duration, now time.Time) *coordinationv1.Lease {
	name := node.Name
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: LeaseNamespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &name,
			LeaseDurationSeconds: ptrTo(leaseDuration(heartbeat)),
			RenewTime:            &metav1.MicroTime{Time: now},
		},
	}
}
