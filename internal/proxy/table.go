package proxy

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/knftables"

	"plainkube.dev/plainkube/internal/netfilter"
)

// tableState is what the proxy last wrote into one family's table, per
// Service, so that a change to one Service becomes a transaction that
// touches only that Service's chains and elements. It does no I/O: its
// methods add operations to a knftables transaction, and commit records
// them once the transaction succeeded.
type tableState struct {
	applied map[string]serviceRules
	// owners says which Service holds each map key (an external address
	// and port can be claimed by two Services; the first keeps it).
	owners map[string]string
	// blocked are Services that lost a key to another: they are
	// recomputed when a key is released.
	blocked map[string]bool
	// slots hands out ranges of the endpoint-slots maps' keys.
	slots slotAllocator
	// hairpins counts the Services each endpoint address serves: its
	// hairpin-pairs element goes with the last.
	hairpins map[netip.Addr]int
	fam      family
	// log mirrors the transaction's element changes that could go over
	// netlink (byNetlink).
	log netfilter.ElementLog
}

func newTableState(f family) *tableState {
	s := &tableState{fam: f}
	s.reset()
	return s
}

// reset forgets what was written: the next transaction rewrites it all.
func (s *tableState) reset() {
	s.applied = map[string]serviceRules{}
	s.owners = map[string]string{}
	s.blocked = map[string]bool{}
	s.slots = slotAllocator{}
	s.hairpins = map[netip.Addr]int{}
	s.log.Reset()
}

// addElement and deleteElement add the element's change to tx, and to
// the log when it could go over netlink.
func (s *tableState) addElement(tx *knftables.Transaction, e element) {
	if byNetlink(e) {
		s.log.Add(tx, s.fam.elementChange(e, false))
		return
	}
	tx.Add(knftablesElement(e))
}

func (s *tableState) deleteElement(tx *knftables.Transaction, e element) {
	if byNetlink(e) {
		s.log.Add(tx, s.fam.elementChange(e, true))
		return
	}
	tx.Delete(knftablesElement(e))
}

// slotRange is n slots of an endpoint-slots map from base.
type slotRange struct{ base, n int }

// slotAllocator hands out ranges of slots: a range given back is taken
// again by the next pool of its size, others come after the last. The
// numbers only grow between full rewrites, which start over.
type slotAllocator struct {
	next int
	free map[int][]int // size → bases
}

func (a *slotAllocator) take(n int) slotRange {
	if bases := a.free[n]; len(bases) > 0 {
		a.free[n] = bases[:len(bases)-1]
		return slotRange{bases[len(bases)-1], n}
	}
	r := slotRange{a.next, n}
	a.next += n
	return r
}

func (a *slotAllocator) give(r slotRange) {
	if a.free == nil {
		a.free = map[int][]int{}
	}
	a.free[r.n] = append(a.free[r.n], r.base)
}

// place gives each pool of r slots — those it had in old if its size
// did not change, so that a replaced endpoint is one changed element and
// its chain stays as it is — and adds the pool's DNAT rule to its chain
// and its endpoints to the slots' elements. It returns old's ranges r no
// longer uses, to give back once the transaction is written.
func (s *tableState) place(r *serviceRules, old serviceRules) (unused []slotRange) {
	if len(r.pools) > 0 {
		r.chains = maps.Clone(r.chains)
		r.elements = slices.Clip(r.elements)
		r.slots = make(map[string]slotRange, len(r.pools))
	}
	for _, chain := range slices.Sorted(maps.Keys(r.pools)) {
		p := r.pools[chain]
		at, ok := old.slots[chain]
		if !ok || at.n != len(p.targets) {
			at = s.slots.take(len(p.targets))
		}
		r.slots[chain] = at
		r.chains[chain] = append(slices.Clip(r.chains[chain]), s.fam.dnatRule(p.proto, at))
		for i, target := range p.targets {
			r.elements = append(r.elements, element{container: endpointSlotsPrefix + p.proto, key: strconv.Itoa(at.base + i), value: target})
		}
	}
	for chain, at := range old.slots {
		if r.slots[chain] != at {
			unused = append(unused, at)
		}
	}
	return unused
}

// updateHairpins adds to tx the hairpin-pairs elements of the addresses
// in cur and not in old, and removes those of old's no Service serves
// any more.
func (s *tableState) updateHairpins(tx *knftables.Transaction, old, cur []netip.Addr) {
	pair := func(a netip.Addr) element {
		return element{container: hairpinSet, key: a.String() + " . " + a.String()}
	}
	for _, a := range cur {
		if !slices.Contains(old, a) {
			if s.hairpins[a]++; s.hairpins[a] == 1 {
				s.addElement(tx, pair(a))
			}
		}
	}
	for _, a := range old {
		if !slices.Contains(cur, a) {
			if s.hairpins[a]--; s.hairpins[a] == 0 {
				delete(s.hairpins, a)
				s.deleteElement(tx, pair(a))
			}
		}
	}
}

func (e element) id() string { return e.container + " " + e.key }

// claim drops from r the elements whose keys another Service holds, with
// a warning each, and reports whether it dropped any.
func (s *tableState) claim(key string, r *serviceRules) {
	kept := r.elements[:0]
	for _, e := range r.elements {
		if o, ok := s.owners[e.id()]; ok && o != key {
			r.warnings = append(r.warnings, fmt.Sprintf("%s %s is already served for Service %s", strings.ReplaceAll(e.key, " . ", "/"), e.container, o))
			s.blocked[key] = true
			continue
		}
		kept = append(kept, e)
	}
	r.elements = kept
}

// update adds to tx what turns the applied rules of Service key into r
// (the zero serviceRules removes the Service). It returns the Services to
// recompute because r released keys they wanted.
func (s *tableState) update(tx *knftables.Transaction, key string, r serviceRules) (retry []string) {
	released := false
	delete(s.blocked, key)
	s.claim(key, &r)
	old := s.applied[key]
	unused := s.place(&r, old)
	s.updateHairpins(tx, old.hairpin, r.hairpin)
	// New chains and sets first, so that rules and elements may refer to
	// them.
	for name := range r.chains {
		if _, ok := old.chains[name]; !ok {
			tx.Add(&knftables.Chain{Name: name})
		}
	}
	for name, timeout := range r.sets {
		if _, ok := old.sets[name]; !ok {
			tx.Add(s.fam.affinitySet(name, timeout))
		}
	}
	for name, rules := range r.chains {
		prev, existed := old.chains[name]
		if existed && slices.Equal(prev, rules) {
			continue
		}
		if existed {
			tx.Flush(&knftables.Chain{Name: name})
		}
		for _, rule := range rules {
			tx.Add(&knftables.Rule{Chain: name, Rule: rule})
		}
	}
	want := map[string]element{}
	for _, e := range r.elements {
		want[e.id()] = e
	}
	for _, e := range old.elements {
		if n, ok := want[e.id()]; !ok || n.value != e.value {
			s.deleteElement(tx, e)
			if !ok {
				delete(s.owners, e.id())
				released = released || !strings.HasPrefix(e.container, endpointSlotsPrefix)
			}
		}
	}
	have := map[string]element{}
	for _, e := range old.elements {
		have[e.id()] = e
	}
	for _, e := range r.elements {
		if o, ok := have[e.id()]; !ok || o.value != e.value {
			s.addElement(tx, e)
		}
		s.owners[e.id()] = key
	}
	// Chains that are gone: emptied first, since they may refer to one
	// another, then deleted; sets after the rules that updated them.
	var gone []string
	for name := range old.chains {
		if _, ok := r.chains[name]; !ok {
			gone = append(gone, name)
			tx.Flush(&knftables.Chain{Name: name})
		}
	}
	for _, name := range gone {
		tx.Delete(&knftables.Chain{Name: name})
	}
	for name := range old.sets {
		if _, ok := r.sets[name]; !ok {
			tx.Delete(&knftables.Set{Name: name})
		}
	}
	for _, at := range unused {
		s.slots.give(at)
	}
	if len(r.chains) == 0 && len(r.elements) == 0 && len(r.sets) == 0 {
		delete(s.applied, key)
	} else {
		s.applied[key] = r
	}
	if released {
		retry = slices.Sorted(maps.Keys(s.blocked))
	}
	return retry
}

// full adds to tx a rewrite of the whole table: the skeleton, the node's
// elements and every Service's rules in services, removing whatever else
// the table holds (existing lists the table's current chains and sets,
// by type, as knftables.ListAll returns them). Affinity sets that stay
// keep their contents. The state is replaced by services.
func (s *tableState) full(tx *knftables.Transaction, node *Node, services map[string]serviceRules, existing map[string][]string) {
	s.reset()
	tx.Add(&knftables.Table{})
	f := s.fam
	chains, mapsList, sets := f.skeleton()
	keep := map[string]bool{}
	for _, c := range chains {
		tx.Add(c)
		tx.Flush(c)
		keep["chain "+c.Name] = true
	}
	for _, m := range mapsList {
		tx.Add(m)
		tx.Flush(m)
		keep["map "+m.Name] = true
	}
	for _, st := range sets {
		tx.Add(st)
		tx.Flush(st)
		keep["set "+st.Name] = true
	}
	// Every chain that exists is emptied, so that none refers to one
	// about to be deleted.
	for _, name := range existing["chain"] {
		if !keep["chain "+name] {
			tx.Flush(&knftables.Chain{Name: name})
		}
	}
	for name, rules := range f.skeletonRules() {
		for _, rule := range rules {
			tx.Add(&knftables.Rule{Chain: name, Rule: rule})
		}
	}
	for _, e := range f.nodeElements(node) {
		tx.Add(knftablesElement(e))
	}
	for _, key := range slices.Sorted(maps.Keys(services)) {
		r := services[key]
		s.claim(key, &r)
		s.place(&r, serviceRules{})
		s.updateHairpins(tx, nil, r.hairpin)
		for name, timeout := range r.sets {
			tx.Add(s.fam.affinitySet(name, timeout))
			keep["set "+name] = true
		}
		for name := range r.chains {
			tx.Add(&knftables.Chain{Name: name})
			keep["chain "+name] = true
		}
		for name, rules := range r.chains {
			for _, rule := range rules {
				tx.Add(&knftables.Rule{Chain: name, Rule: rule})
			}
		}
		for _, e := range r.elements {
			tx.Add(knftablesElement(e))
			s.owners[e.id()] = key
		}
		if len(r.chains) > 0 || len(r.elements) > 0 || len(r.sets) > 0 {
			s.applied[key] = r
		}
	}
	for _, name := range existing["chain"] {
		if !keep["chain "+name] {
			tx.Delete(&knftables.Chain{Name: name})
		}
	}
	for _, typ := range []string{"set", "map"} {
		for _, name := range existing[typ] {
			if !keep[typ+" "+name] {
				if typ == "set" {
					tx.Delete(&knftables.Set{Name: name})
				} else {
					tx.Delete(&knftables.Map{Name: name})
				}
			}
		}
	}
}

// affinitySet remembers the clients pinned to one endpoint, each for
// timeout after its last connection.
func (f family) affinitySet(name string, timeout time.Duration) *knftables.Set {
	return &knftables.Set{Name: name, Type: f.AddrType, Flags: []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag}, Timeout: &timeout}
}

func knftablesElement(e element) *knftables.Element {
	el := &knftables.Element{Key: strings.Split(e.key, " . ")}
	if e.value == "" {
		el.Set = e.container
	} else {
		el.Map = e.container
		el.Value = strings.Split(e.value, " . ")
	}
	return el
}
