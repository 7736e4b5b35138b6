package sim

import (
	"net/netip"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// ipam hands out the pod addresses of one node's IPv4 CIDR: the first
// address is the network's, the second the node's bridge, the last the
// broadcast address; the rest go to pods, one per pod UID.
type ipam struct {
	mu     sync.Mutex
	prefix netip.Prefix
	size   uint32 // usable host offsets are 2 .. size-2
	next   uint32
	byUID  map[types.UID]netip.Addr
	used   map[netip.Addr]types.UID
}

func newIPAM(prefix netip.Prefix) *ipam {
	prefix = prefix.Masked()
	bits := 32 - prefix.Bits()
	size := uint32(1) << min(bits, 16) // at most 65536 addresses a node
	return &ipam{prefix: prefix, size: size, next: 2, byUID: map[types.UID]netip.Addr{}, used: map[netip.Addr]types.UID{}}
}

// allocate returns uid's address, choosing a free one the first time;
// false when none is free.
func (a *ipam) allocate(uid types.UID) (netip.Addr, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, ok := a.byUID[uid]; ok {
		return ip, true
	}
	if a.size < 4 {
		return netip.Addr{}, false
	}
	hosts := a.size - 3 // offsets 2 .. size-2
	for range hosts {
		off := a.next
		a.next++
		if a.next > a.size-2 {
			a.next = 2
		}
		ip := addV4(a.prefix.Addr(), off)
		if _, taken := a.used[ip]; !taken {
			a.used[ip], a.byUID[uid] = uid, ip
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// claim records that uid holds ip (a pod that already has its address).
func (a *ipam) claim(uid types.UID, ip string) {
	addr, err := netip.ParseAddr(ip)
	if err != nil || !a.prefix.Contains(addr) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, taken := a.used[addr]; taken {
		return
	}
	if old, ok := a.byUID[uid]; ok {
		delete(a.used, old)
	}
	a.used[addr], a.byUID[uid] = uid, addr
}

// release frees uid's address.
func (a *ipam) release(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, ok := a.byUID[uid]; ok {
		delete(a.byUID, uid)
		delete(a.used, ip)
	}
}
