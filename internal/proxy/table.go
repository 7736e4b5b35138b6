package proxy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/knftables"
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
	fam     family
}

func newTableState(f family) *tableState {
	return &tableState{fam: f, applied: map[string]serviceRules{}, owners: map[string]string{}, blocked: map[string]bool{}}
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
			tx.Delete(knftablesElement(e))
			if !ok {
				delete(s.owners, e.id())
				released = true
			}
		}
	}
	have := map[string]element{}
	for _, e := range old.elements {
		have[e.id()] = e
	}
	for _, e := range r.elements {
		if o, ok := have[e.id()]; !ok || o.value != e.value {
			tx.Add(knftablesElement(e))
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
	s.applied = map[string]serviceRules{}
	s.owners = map[string]string{}
	s.blocked = map[string]bool{}
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
	return &knftables.Set{Name: name, Type: f.addrType, Flags: []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag}, Timeout: &timeout}
}

func knftablesElement(e element) *knftables.Element {
	el := &knftables.Element{Key: strings.Split(e.key, " . ")}
	if e.value == "" {
		el.Set = e.container
	} else {
		el.Map = e.container
		el.Value = []string{e.value}
	}
	return el
}
