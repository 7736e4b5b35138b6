package allocator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/storage"
)

const (
	// legacyIPPrefix held cluster IP allocations before IPAddress objects
	// did; the repair loop moves them over and removes them.
	legacyIPPrefix = "/registry/ranges/serviceips/"
	portPrefix     = "/registry/ranges/servicenodeports/"
)

// PortRange is an inclusive range of node ports.
type PortRange struct{ Min, Max int }

// DefaultNodePorts is upstream's default node port range.
var DefaultNodePorts = PortRange{30000, 32767}

// Services allocates cluster IPs from the server's service CIDR and the
// ServiceCIDR objects, and node ports from one range.
type Services struct {
	store storage.Interface
	cidr  netip.Prefix
	ports PortRange
	// Set by Start: the client IPAddresses are written with and the
	// ServiceCIDRs read.
	client       kubernetes.Interface
	serviceCIDRs networkinglisters.ServiceCIDRLister
	synced       cache.InformerSynced
	// legacy: allocation records of the older kind may still exist.
	legacy atomic.Bool
}

func New(st storage.Interface, cidr netip.Prefix, ports PortRange) *Services {
	return &Services{store: st, cidr: cidr.Masked(), ports: ports}
}

// Start gives the allocator its client and its ServiceCIDR informer (on
// f, which the caller starts); HasSynced says when the informer has.
func (a *Services) Start(f informers.SharedInformerFactory, cs kubernetes.Interface) {
	inf := f.Networking().V1().ServiceCIDRs()
	a.serviceCIDRs, a.synced = inf.Lister(), inf.Informer().HasSynced
	a.client = cs
	a.legacy.Store(true)
}

// HasSynced: the ServiceCIDRs have been read.
func (a *Services) HasSynced() bool { return a.synced != nil && a.synced() }

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
		BeforeUpdate: func(ctx context.Context, obj, old runtime.Object) (func(), error) {
			return a.allocate(ctx, obj.(*corev1.Service), old.(*corev1.Service))
		},
		AfterUpdate: func(ctx context.Context, obj, old runtime.Object) {
			a.releaseDropped(ctx, old.(*corev1.Service), obj.(*corev1.Service))
		},
		AfterDelete: func(ctx context.Context, obj runtime.Object) {
			a.releaseDropped(ctx, obj.(*corev1.Service), nil)
		},
	}
}

// releaseDropped lets go of the cluster IPs and node ports svc held that
// kept (the same Service updated; nil once it is deleted) does not: a type
// change to ExternalName or ClusterIP, a port removed.
func (a *Services) releaseDropped(ctx context.Context, svc, kept *corev1.Service) {
	var keptIPs []string
	keptPorts := map[int32]bool{}
	if kept != nil {
		keptIPs = kept.Spec.ClusterIPs
		for _, p := range kept.Spec.Ports {
			keptPorts[p.NodePort] = true
		}
	}
	for _, ip := range svc.Spec.ClusterIPs {
		if ip != corev1.ClusterIPNone && !slices.Contains(keptIPs, ip) {
			a.releaseIP(ctx, ip, svc)
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !keptPorts[p.NodePort] {
			a.releasePort(ctx, p.NodePort, owner(svc))
		}
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
	var takenIP string
	undo := func() {
		if takenIP != "" {
			a.releaseIP(context.Background(), takenIP, svc)
		}
		for _, k := range taken {
			a.release(context.Background(), k)
		}
	}
	fail := func(errs field.ErrorList) (func(), error) {
		undo()
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs)
	}
	if needsClusterIP(svc) && (old == nil || old.Spec.ClusterIP == "" || old.Spec.ClusterIP == corev1.ClusterIPNone) {
		fld := field.NewPath("spec", "clusterIPs").Index(0)
		if svc.Spec.ClusterIP != "" {
			ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
			if err != nil {
				return fail(field.ErrorList{field.Invalid(fld, svc.Spec.ClusterIP, "must be a valid IP address")})
			}
			rs := a.ranges(ip.Is6())
			if !slices.ContainsFunc(rs, func(r netip.Prefix) bool { return r.Contains(ip) }) {
				return fail(field.ErrorList{field.Invalid(fld, svc.Spec.ClusterIP, fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", svc.Spec.ClusterIP, svc.Spec.ClusterIP, joinPrefixes(rs)))})
			}
			switch err := a.takeIP(ctx, ip, svc); {
			case errors.Is(err, errAllocated):
				return fail(field.ErrorList{field.Invalid(fld, svc.Spec.ClusterIP, fmt.Sprintf("failed to allocate IP %s: %v", svc.Spec.ClusterIP, err))})
			case err != nil:
				return fail(field.ErrorList{field.InternalError(fld, err)})
			}
			takenIP = ip.String()
		} else {
			is6 := a.cidr.Addr().Is6()
			if len(svc.Spec.IPFamilies) > 0 {
				is6 = svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
			}
			ip, err := a.randomIP(ctx, svc, is6)
			if err != nil {
				return fail(field.ErrorList{field.InternalError(fld, fmt.Errorf("failed to allocate a serviceIP: %w", err))})
			}
			takenIP = ip.String()
			svc.Spec.ClusterIP = takenIP
		}
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = []corev1.IPFamily{family(netip.MustParseAddr(svc.Spec.ClusterIP).Is6())}
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
				if err := a.take(ctx, key, owner(svc)); err != nil {
					return fail(field.ErrorList{field.Invalid(fld, p.NodePort, "provided port is already allocated")})
				}
				taken = append(taken, key)
			default:
				port, err := a.randomPort(ctx, owner(svc))
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

func owner(svc *corev1.Service) string { return svc.Namespace + "/" + svc.Name }

// take records key (a node port) as owner's, with the time: the repair
// loop leaves a record without its Service alone while it is young (the
// Service is stored just after).
func (a *Services) take(ctx context.Context, key, owner string) error {
	_, err := a.store.Create(ctx, key, []byte(owner+"\n"+time.Now().UTC().Format(time.RFC3339)))
	return err
}

// portRecord reads a node port's record: its owner ("namespace/name") and
// when it was taken (zero for a record of an older server, which kept
// only the owner).
func portRecord(value []byte) (owner string, taken time.Time) {
	owner, at, _ := strings.Cut(string(value), "\n")
	taken, _ = time.Parse(time.RFC3339, at)
	return owner, taken
}

func (a *Services) release(ctx context.Context, key string) {
	if _, _, err := a.store.Delete(ctx, key, 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
		_ = err // a leaked allocation only narrows the range, until the repair loop frees it
	}
}

// releasePort deletes the node port's record if it is still owner's.
func (a *Services) releasePort(ctx context.Context, port int32, owner string) {
	key := portPrefix + fmt.Sprint(port)
	kv, err := a.store.Get(ctx, key)
	if err != nil {
		return
	}
	if o, _ := portRecord(kv.Value); o != owner {
		return
	}
	if _, _, err := a.store.Delete(ctx, key, kv.ModRevision); err != nil && !errors.Is(err, storage.ErrNotFound) {
		_ = err // changed meanwhile, or storage failed: the repair loop sees to it
	}
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
	return 0, errFull
}
