package netpol

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"

	"sigs.k8s.io/knftables"

	"plainkube.dev/plainkube/internal/netfilter"
)

// tableState is what was written into one family's table, per policy, so
// that a change becomes a transaction that touches only what changed. It
// does no I/O: apply adds operations to a knftables transaction; the
// caller resets it when the transaction fails.
type tableState struct {
	fam family
	// applied are the policies written, by key (namespace/name).
	applied map[string]*policyState
	// byNamespace are the keys of applied, by namespace.
	byNamespace map[string]map[string]bool
	// namespaceChains are the namespace chains written, with their rules.
	namespaceChains map[string][]string
	// refs count, per direction and address, the policies of each
	// namespace that select it; dispatch is the namespace chain each
	// address's map element sends to.
	refs     [2]map[netip.Addr]map[string]int
	dispatch [2]map[netip.Addr]string
	// log mirrors the transaction's element changes, so that one of
	// nothing else can go over netlink.
	log netfilter.ElementLog
}

// policyState is one policy as written.
type policyState struct {
	c   *compiled
	obj objects
}

func newTableState(f family) *tableState {
	s := &tableState{fam: f}
	s.reset()
	return s
}

// reset forgets what was written.
func (s *tableState) reset() {
	s.applied = map[string]*policyState{}
	s.byNamespace = map[string]map[string]bool{}
	s.namespaceChains = map[string][]string{}
	for _, d := range directions {
		s.refs[d] = map[netip.Addr]map[string]int{}
		s.dispatch[d] = map[netip.Addr]string{}
	}
	s.log.Reset()
}

// full adds to tx a rewrite of the whole table from scratch (the table is
// deleted and made again, in the one transaction) with the policies in
// all; the state is replaced by them.
func (s *tableState) full(tx *knftables.Transaction, all map[string]*compiled) {
	s.reset()
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	tx.Add(&knftables.Table{})
	chains, maps := s.fam.skeleton()
	for _, m := range maps {
		tx.Add(m)
	}
	for _, c := range chains {
		tx.Add(c)
	}
	rules := s.fam.skeletonRules()
	for _, c := range chains {
		for _, r := range rules[c.Name] {
			tx.Add(&knftables.Rule{Chain: c.Name, Rule: r})
		}
	}
	s.apply(tx, all)
}

// apply adds to tx what turns the written policies of updates' keys into
// updates' values (nil removes one). It reports whether the change may
// forbid traffic that was allowed (a pod newly isolated, a rule changed,
// an address no longer admitted): then established connections need
// checking.
func (s *tableState) apply(tx *knftables.Transaction, updates map[string]*compiled) (narrowed bool) {
	type nsDir struct {
		ns string
		d  direction
	}
	touchedNS := map[nsDir]bool{}
	touchedAddrs := [2]map[netip.Addr]bool{{}, {}}
	var gone []objects
	for _, key := range sortedKeys(updates) {
		c := updates[key]
		old := s.applied[key]
		var oldObj objects
		var oldC *compiled
		if old != nil {
			oldObj, oldC = old.obj, old.c
		}
		cur := s.fam.render(key, c)
		if s.diff(tx, key, oldObj, cur) {
			narrowed = true
		}
		gone = append(gone, without(oldObj, cur))
		// Who selects which address, and which namespace chains change.
		for _, d := range directions {
			if oldC != nil && oldC.dirs[d] != nil {
				touchedNS[nsDir{oldC.namespace, d}] = true
				for _, a := range oldC.targets {
					s.ref(d, a, oldC.namespace, -1)
					touchedAddrs[d][a] = true
				}
			}
			if c != nil && c.dirs[d] != nil {
				touchedNS[nsDir{c.namespace, d}] = true
				for _, a := range c.targets {
					s.ref(d, a, c.namespace, 1)
					touchedAddrs[d][a] = true
				}
			}
		}
		if old != nil {
			delete(s.byNamespace[oldC.namespace], key)
			delete(s.applied, key)
		}
		if c != nil {
			if s.byNamespace[c.namespace] == nil {
				s.byNamespace[c.namespace] = map[string]bool{}
			}
			s.byNamespace[c.namespace][key] = true
			s.applied[key] = &policyState{c: c, obj: cur}
		}
	}
	// Namespace chains: made or rewritten before the map elements that
	// send to them, deleted after.
	var goneChains []string
	for _, nd := range slices.SortedFunc(maps.Keys(touchedNS), func(a, b nsDir) int {
		if a.ns != b.ns {
			return cmp.Compare(a.ns, b.ns)
		}
		return int(a.d) - int(b.d)
	}) {
		name := namespaceChain(nd.d, nd.ns)
		var keys []string
		for _, key := range sortedKeys(s.byNamespace[nd.ns]) {
			if s.applied[key].c.dirs[nd.d] != nil {
				keys = append(keys, key)
			}
		}
		prev, existed := s.namespaceChains[name]
		if len(keys) == 0 {
			if existed {
				goneChains = append(goneChains, name)
				delete(s.namespaceChains, name)
			}
			continue
		}
		rules := s.fam.namespaceRules(nd.d, keys)
		if existed && slices.Equal(prev, rules) {
			continue
		}
		if existed {
			tx.Flush(&knftables.Chain{Name: name})
		} else {
			tx.Add(&knftables.Chain{Name: name})
		}
		for _, r := range rules {
			tx.Add(&knftables.Rule{Chain: name, Rule: r})
		}
		s.namespaceChains[name] = rules
	}
	for _, d := range directions {
		for _, a := range slices.SortedFunc(maps.Keys(touchedAddrs[d]), netip.Addr.Compare) {
			want := ""
			if nss := s.refs[d][a]; len(nss) > 0 {
				want = namespaceChain(d, sortedKeys(nss)[0])
			}
			have := s.dispatch[d][a]
			if want == have {
				continue
			}
			if have != "" {
				s.log.Add(tx, s.fam.dispatchElement(d, a, ""))
				delete(s.dispatch[d], a)
			}
			if want != "" {
				s.log.Add(tx, s.fam.dispatchElement(d, a, want))
				s.dispatch[d][a] = want
				narrowed = true
			}
		}
	}
	for _, name := range goneChains {
		tx.Flush(&knftables.Chain{Name: name})
		tx.Delete(&knftables.Chain{Name: name})
	}
	// Policies' chains and sets that are gone: chains emptied first (they
	// refer to the sets), then deleted.
	for _, o := range gone {
		for _, name := range sortedKeys(o.chains) {
			tx.Flush(&knftables.Chain{Name: name})
		}
	}
	for _, o := range gone {
		for _, name := range sortedKeys(o.chains) {
			tx.Delete(&knftables.Chain{Name: name})
		}
		for _, name := range sortedKeys(o.sets) {
			tx.Delete(&knftables.Set{Name: name})
		}
	}
	return narrowed
}

// diff adds to tx what turns one policy's objects old into cur, but for
// deleting what cur no longer has (see without). It reports whether the
// change may forbid what was allowed.
func (s *tableState) diff(tx *knftables.Transaction, key string, old, cur objects) (narrowed bool) {
	for _, name := range sortedKeys(cur.sets) {
		if _, ok := old.sets[name]; !ok {
			tx.Add(s.fam.set(name, cur.sets[name]))
		}
	}
	for _, name := range sortedKeys(cur.chains) {
		if _, ok := old.chains[name]; !ok {
			tx.Add(&knftables.Chain{Name: name})
		}
	}
	sel := selectedSet(key)
	for _, name := range sortedKeys(cur.sets) {
		have := map[string]bool{}
		for _, e := range old.elements[name] {
			have[e] = true
		}
		want := map[string]bool{}
		for _, e := range cur.elements[name] {
			want[e] = true
			if !have[e] {
				s.log.Add(tx, setElement(name, cur.sets[name], e, false))
				narrowed = narrowed || name == sel
			}
		}
		for _, e := range old.elements[name] {
			if !want[e] {
				s.log.Add(tx, setElement(name, cur.sets[name], e, true))
				narrowed = true
			}
		}
	}
	for _, name := range sortedKeys(cur.chains) {
		rules := cur.chains[name]
		prev, existed := old.chains[name]
		if existed && slices.Equal(prev, rules) {
			continue
		}
		if existed {
			tx.Flush(&knftables.Chain{Name: name})
		}
		for _, r := range rules {
			tx.Add(&knftables.Rule{Chain: name, Rule: r})
		}
		narrowed = true
	}
	return narrowed
}

// without are old's chains and sets that cur does not have.
func without(old, cur objects) objects {
	o := objects{chains: map[string][]string{}, sets: map[string]setSpec{}}
	for name, rules := range old.chains {
		if _, ok := cur.chains[name]; !ok {
			o.chains[name] = rules
		}
	}
	for name, spec := range old.sets {
		if _, ok := cur.sets[name]; !ok {
			o.sets[name] = spec
		}
	}
	return o
}

func (s *tableState) ref(d direction, a netip.Addr, ns string, delta int) {
	m := s.refs[d][a]
	if m == nil {
		m = map[string]int{}
		s.refs[d][a] = m
	}
	if m[ns] += delta; m[ns] <= 0 {
		delete(m, ns)
	}
	if len(m) == 0 {
		delete(s.refs[d], a)
	}
}
