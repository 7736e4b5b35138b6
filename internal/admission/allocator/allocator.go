package allocator

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/storage"
)

const (
	ipPrefix   = "/registry/ranges/serviceips/"
	portPrefix = "/registry/ranges/servicenodeports/"
)

// PortRange is an inclusive range of node ports.
type PortRange struct{ Min, Max int }

// DefaultNodePorts is upstream's default node port range.
var DefaultNodePorts = PortRange{30000, 32767}

// Services allocates from one service CIDR and one node port range.
type Services struct {
	store storage.Interface
	cidr  netip.Prefix
	ports PortRange
}

func New(st storage.Interface, cidr netip.Prefix, ports PortRange) *Services {
	return &Services{store: st, cidr: cidr.Masked(), ports: ports}
}

// FirstIP is the range's first usable address, kept for the `kubernetes` Service.
func (a *Services) FirstIP() netip.Addr { return a.cidr.Addr().Next() }

// Name is the plugin's name in the admission chain.
const Name = "ServiceAllocation"

// Plugin is the admission step of the services resource: it allocates on
// creates and updates and releases what a deleted Service held.
func (a *Services) Plugin() admission.Plugin {
	return admission.Plugin{
		Name:      Name,
		Resources: []schema.GroupResource{{Resource: "services"}},
		BeforeCreate: func(ctx context.Context, obj runtime.Object) (func(), error) {
			return a.allocate(ctx, obj.(*corev1.Service), nil)
		},
		BeforeUpdate: func(ctx context.Context, obj, old runtime.Object) error {
			_, err := a.allocate(ctx, obj.(*corev1.Service), old.(*corev1.Service))
			return err
		},
		AfterDelete: func(ctx context.Context, obj runtime.Object) {
			svc := obj.(*corev1.Service)
			for _, ip := range svc.Spec.ClusterIPs {
				a.release(ctx, ipPrefix+ip)
			}
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					a.release(ctx, portPrefix+fmt.Sprint(p.NodePort))
				}
			}
		},
	}
}

func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

func needsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// allocate fills in svc's cluster IP and node ports (keeping those of old)
// and returns a function that releases what it took.
func (a *Services) allocate(ctx context.Context, svc, old *corev1.Service) (func(), error) {
	var taken []string
	undo := func() {
		for _, k := range taken {
			a.release(context.Background(), k)
		}
	}
	fail := func(errs field.ErrorList) (func(), error) {
		undo()
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs)
	}
	owner := svc.Namespace + "/" + svc.Name
	if needsClusterIP(svc) && (old == nil || old.Spec.ClusterIP == "" || old.Spec.ClusterIP == corev1.ClusterIPNone) {
		fld := field.NewPath("spec", "clusterIPs").Index(0)
		if svc.Spec.ClusterIP != "" {
			ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
			if err != nil || !a.cidr.Contains(ip) {
				return fail(field.ErrorList{field.Invalid(fld, svc.Spec.ClusterIP, fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", svc.Spec.ClusterIP, svc.Spec.ClusterIP, a.cidr))})
			}
			if err := a.take(ctx, ipPrefix+ip.String(), owner); err != nil {
				return fail(field.ErrorList{field.Invalid(fld, svc.Spec.ClusterIP, fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", svc.Spec.ClusterIP))})
			}
			taken = append(taken, ipPrefix+ip.String())
		} else {
			ip, err := a.randomIP(ctx, owner)
			if err != nil {
				return fail(field.ErrorList{field.InternalError(fld, err)})
			}
			taken = append(taken, ipPrefix+ip.String())
			svc.Spec.ClusterIP = ip.String()
		}
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}
		if svc.Spec.IPFamilyPolicy == nil {
			p := corev1.IPFamilyPolicySingleStack
			svc.Spec.IPFamilyPolicy = &p
		}
	}
	if needsNodePorts(svc) {
		oldPorts := map[int32]bool{}
		if old != nil {
			for _, p := range old.Spec.Ports {
				oldPorts[p.NodePort] = p.NodePort != 0
			}
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			fld := field.NewPath("spec", "ports").Index(i).Child("nodePort")
			switch {
			case p.NodePort != 0 && oldPorts[p.NodePort]:
				continue
			case p.NodePort != 0:
				if int(p.NodePort) < a.ports.Min || int(p.NodePort) > a.ports.Max {
					return fail(field.ErrorList{field.Invalid(fld, p.NodePort, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", a.ports.Min, a.ports.Max))})
				}
				key := portPrefix + fmt.Sprint(p.NodePort)
				if err := a.take(ctx, key, owner); err != nil {
					return fail(field.ErrorList{field.Invalid(fld, p.NodePort, "provided port is already allocated")})
				}
				taken = append(taken, key)
			default:
				port, err := a.randomPort(ctx, owner)
				if err != nil {
					return fail(field.ErrorList{field.InternalError(fld, err)})
				}
				taken = append(taken, portPrefix+fmt.Sprint(port))
				p.NodePort = int32(port)
			}
		}
	}
	return undo, nil
}

func (a *Services) take(ctx context.Context, key, owner string) error {
	_, err := a.store.Create(ctx, key, []byte(owner))
	return err
}

func (a *Services) release(ctx context.Context, key string) {
	if _, _, err := a.store.Delete(ctx, key, 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
		_ = err // a leaked allocation only narrows the range
	}
}

// randomIP takes a free address from the range, never the network address,
// the first address (the kubernetes Service's) or the broadcast address.
func (a *Services) randomIP(ctx context.Context, owner string) (netip.Addr, error) {
	bits := a.cidr.Addr().BitLen() - a.cidr.Bits()
	size := new(big.Int).Lsh(big.NewInt(1), uint(bits)).Int64()
	if bits > 62 {
		size = 1 << 62
	}
	if size < 4 {
		return netip.Addr{}, errors.New("service CIDR too small")
	}
	base := new(big.Int).SetBytes(a.cidr.Addr().AsSlice())
	for try := 0; try < 256; try++ {
		off := 2 + rand.Int64N(size-3)
		n := new(big.Int).Add(base, big.NewInt(off))
		b := n.FillBytes(make([]byte, len(a.cidr.Addr().AsSlice())))
		ip, _ := netip.AddrFromSlice(b)
		if err := a.take(ctx, ipPrefix+ip.String(), owner); err == nil {
			return ip, nil
		} else if !errors.Is(err, storage.ErrKeyExists) {
			return netip.Addr{}, err
		}
	}
	return netip.Addr{}, errors.New("range is full")
}

func (a *Services) randomPort(ctx context.Context, owner string) (int, error) {
	n := a.ports.Max - a.ports.Min + 1
	start := rand.IntN(n)
	for i := 0; i < n; i++ {
		port := a.ports.Min + (start+i)%n
		if err := a.take(ctx, portPrefix+fmt.Sprint(port), owner); err == nil {
			return port, nil
		} else if !errors.Is(err, storage.ErrKeyExists) {
			return 0, err
		}
	}
	return 0, errors.New("range is full")
}
