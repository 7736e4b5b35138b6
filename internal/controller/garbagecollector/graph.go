package garbagecollector

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Identity names one object as an owner reference does, plus its namespace
// ("" for a cluster-scoped object).
type Identity struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        types.UID
}

func (id Identity) String() string {
	ns := id.Namespace
	if ns != "" {
		ns += "/"
	}
	return fmt.Sprintf("%s, Kind=%s %s%s (uid %s)", id.APIVersion, id.Kind, ns, id.Name, id.UID)
}

// group is the API group of the identity's apiVersion.
func (id Identity) group() string {
	if i := strings.Index(id.APIVersion, "/"); i >= 0 {
		return id.APIVersion[:i]
	}
	return ""
}

// referenceIdentity is the identity an owner reference names when read by
// a dependent in namespace ns.
func referenceIdentity(ref metav1.OwnerReference, ns string) Identity {
	return Identity{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ns, Name: ref.Name, UID: ref.UID}
}

// sameObject reports whether a (possibly guessed) identity and an observed
// one name the same object: same group, kind and name, and the same
// namespace unless the observed object is cluster-scoped.
func sameObject(guess, observed Identity) bool {
	return guess.UID == observed.UID && guess.group() == observed.group() && guess.Kind == observed.Kind &&
		guess.Name == observed.Name && (observed.Namespace == "" || guess.Namespace == observed.Namespace)
}

// EventType is the kind of an Event.
type EventType int

const (
	// Upsert: the object was added or updated.
	Upsert EventType = iota
	// Delete: the object is gone.
	Delete
)

// Event is one observation of an object, from an informer or (Virtual) from
// the collector's own live read.
type Event struct {
	Type EventType
	// Virtual marks a Delete that the collector verified itself: a live
	// read found no object with this UID at Object's coordinates.
	Virtual      bool
	Object       Identity
	Owners       []metav1.OwnerReference
	Finalizers   []string
	BeingDeleted bool // metadata.deletionTimestamp is set
}

// Actions are the UIDs an event asks the driver to look at.
type Actions struct {
	AttemptToDelete []types.UID
	AttemptToOrphan []types.UID
}

func (a *Actions) del(uid types.UID) {
	if !slices.Contains(a.AttemptToDelete, uid) {
		a.AttemptToDelete = append(a.AttemptToDelete, uid)
	}
}

func (a *Actions) orphan(uid types.UID) {
	if !slices.Contains(a.AttemptToOrphan, uid) {
		a.AttemptToOrphan = append(a.AttemptToOrphan, uid)
	}
}

type node struct {
	id Identity
	// observed is false for a virtual node: an owner some reference names
	// that no informer has reported.
	observed           bool
	beingDeleted       bool
	deletingDependents bool
	owners             []metav1.OwnerReference
	dependents         map[types.UID]*node
}

// sortedDependents are the UIDs of n's dependents, sorted so that what
// Apply returns does not depend on map order.
func (n *node) sortedDependents() []types.UID {
	out := make([]types.UID, 0, len(n.dependents))
	for uid := range n.dependents {
		out = append(out, uid)
	}
	slices.Sort(out)
	return out
}

// blocks reports whether n's reference to owner has blockOwnerDeletion.
func (n *node) blocks(owner types.UID) bool {
	for _, ref := range n.owners {
		if ref.UID == owner {
			return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
		}
	}
	return false
}

// Graph is the ownership graph: the garbage collector's pure core. It has
// no goroutines, clock or I/O; its user serialises calls to it.
type Graph struct {
	nodes  map[types.UID]*node
	absent *absentCache
}

// NewGraph is an empty graph.
func NewGraph() *Graph {
	return &Graph{nodes: map[types.UID]*node{}, absent: newAbsentCache(absentCacheSize)}
}

// Len is the number of nodes, virtual ones included.
func (g *Graph) Len() int { return len(g.nodes) }

// Apply records ev and returns what to look at because of it.
func (g *Graph) Apply(ev Event) Actions {
	var a Actions
	switch ev.Type {
	case Upsert:
		g.upsert(ev, &a)
	case Delete:
		g.remove(ev, &a)
	}
	return a
}

func (g *Graph) upsert(ev Event, a *Actions) {
	uid := ev.Object.UID
	n, found := g.nodes[uid]
	if !found {
		n = &node{id: ev.Object, observed: true, dependents: map[types.UID]*node{}, owners: slices.Clone(ev.Owners)}
		g.nodes[uid] = n
		g.addToOwners(n, n.owners, a)
	} else {
		if !n.observed {
			// A virtual node is seen for real. If the reference it was
			// made from guessed other coordinates, its dependents check
			// their references again.
			if !sameObject(n.id, ev.Object) {
				for _, dep := range n.sortedDependents() {
					a.del(dep)
				}
			}
			n.observed = true
		}
		n.id = ev.Object
		added, removed, unblocked := diffOwners(n.owners, ev.Owners)
		n.owners = slices.Clone(ev.Owners)
		g.addToOwners(n, added, a)
		g.removeFromOwners(n, removed)
		// An owner waiting for its blocking dependents may now be free.
		for _, ref := range unblocked {
			if _, ok := g.nodes[ref]; ok {
				a.del(ref)
			}
		}
	}
	if ev.BeingDeleted {
		n.beingDeleted = true // one way: deletionTimestamp is never unset
	}
	n.deletingDependents = n.beingDeleted && slices.Contains(ev.Finalizers, metav1.FinalizerDeleteDependents)
	switch {
	case n.beingDeleted && slices.Contains(ev.Finalizers, metav1.FinalizerOrphanDependents):
		a.orphan(uid)
	case n.deletingDependents:
		for _, dep := range n.sortedDependents() {
			a.del(dep)
		}
		a.del(uid)
	}
	// A dependent of an owner that is deleting its dependents goes too,
	// even one that appeared after the owner's deletion started.
	for _, ref := range n.owners {
		if o, ok := g.nodes[ref.UID]; ok && o.deletingDependents {
			a.del(uid)
			break
		}
	}
}

// addToOwners links n under each owner refs names, creating a virtual node
// (to be verified by a live read) for an owner not in the graph.
func (g *Graph) addToOwners(n *node, refs []metav1.OwnerReference, a *Actions) {
	for _, ref := range refs {
		if ref.UID == n.id.UID {
			continue // an object cannot wait for itself
		}
		o, ok := g.nodes[ref.UID]
		if !ok {
			o = &node{id: referenceIdentity(ref, n.id.Namespace), dependents: map[types.UID]*node{}}
			g.nodes[ref.UID] = o
			a.del(ref.UID)
		}
		o.dependents[n.id.UID] = n
	}
}

// removeFromOwners unlinks n from each owner refs names. A virtual owner
// left with no dependents is forgotten: nothing refers to it any more.
func (g *Graph) removeFromOwners(n *node, refs []metav1.OwnerReference) {
	for _, ref := range refs {
		o, ok := g.nodes[ref.UID]
		if !ok {
			continue
		}
		delete(o.dependents, n.id.UID)
		if !o.observed && len(o.dependents) == 0 {
			delete(g.nodes, ref.UID)
		}
	}
}

func (g *Graph) remove(ev Event, a *Actions) {
	uid := ev.Object.UID
	n, ok := g.nodes[uid]
	if !ok {
		return
	}
	if ev.Virtual {
		if n.observed && !sameObject(ev.Object, n.id) {
			// The object is known at other coordinates than the ones
			// found empty: keep it, but let the dependents whose
			// references name those coordinates check them again.
			g.absent.add(ev.Object)
			for _, dep := range g.dependentsReferencing(n, ev.Object) {
				a.del(dep)
			}
			return
		}
		if !n.observed {
			matching := g.dependentsReferencing(n, ev.Object)
			if len(matching) < len(n.dependents) {
				// Some dependents name this owner by other coordinates:
				// those are still to be verified, so the virtual node
				// stays, under one of the other coordinates.
				g.absent.add(ev.Object)
				for _, dep := range matching {
					a.del(dep)
				}
				if n.id == ev.Object {
					if alt, ok := g.alternateIdentity(n, ev.Object); ok {
						n.id = alt
						a.del(uid)
					}
				}
				return
			}
		}
	}
	delete(g.nodes, uid)
	g.removeFromOwners(n, n.owners)
	if len(n.dependents) > 0 {
		g.absent.add(n.id)
	}
	for _, dep := range n.sortedDependents() {
		a.del(dep)
	}
	// An owner waiting for its dependents may now have none left.
	for _, ref := range n.owners {
		if o, ok := g.nodes[ref.UID]; ok && o.deletingDependents {
			a.del(ref.UID)
		}
	}
}

// dependentsReferencing lists n's dependents whose reference to n names
// the object id (which was found absent).
func (g *Graph) dependentsReferencing(n *node, id Identity) []types.UID {
	var out []types.UID
	for duid, d := range n.dependents {
		for _, ref := range d.owners {
			if ref.UID == n.id.UID && sameObject(referenceIdentity(ref, d.id.Namespace), id) {
				out = append(out, duid)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// alternateIdentity is another identity by which a dependent of n names it.
func (g *Graph) alternateIdentity(n *node, not Identity) (Identity, bool) {
	var alts []Identity
	for _, d := range n.dependents {
		for _, ref := range d.owners {
			if id := referenceIdentity(ref, d.id.Namespace); ref.UID == n.id.UID && !sameObject(id, not) {
				alts = append(alts, id)
			}
		}
	}
	if len(alts) == 0 {
		return Identity{}, false
	}
	slices.SortFunc(alts, func(x, y Identity) int { return strings.Compare(x.String(), y.String()) })
	return alts[0], true
}

// diffOwners compares an object's old and new owner references by UID: the
// owners added and removed, and the owners whose blocking reference was
// removed or stopped blocking.
func diffOwners(old, new []metav1.OwnerReference) (added, removed []metav1.OwnerReference, unblocked []types.UID) {
	blocking := func(r metav1.OwnerReference) bool { return r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion }
	newByUID := map[types.UID]metav1.OwnerReference{}
	for _, r := range new {
		newByUID[r.UID] = r
	}
	oldByUID := map[types.UID]metav1.OwnerReference{}
	for _, r := range old {
		oldByUID[r.UID] = r
		nr, ok := newByUID[r.UID]
		if !ok {
			removed = append(removed, r)
			if blocking(r) {
				unblocked = append(unblocked, r.UID)
			}
			continue
		}
		if blocking(r) && !blocking(nr) {
			unblocked = append(unblocked, r.UID)
		}
	}
	for _, r := range new {
		if _, ok := oldByUID[r.UID]; !ok {
			added = append(added, r)
		}
	}
	return added, removed, unblocked
}

// NodeInfo is a copy of one node's state.
type NodeInfo struct {
	Identity           Identity
	Observed           bool
	BeingDeleted       bool
	DeletingDependents bool
	// Dependents are sorted by UID.
	Dependents []DependentInfo
}

// DependentInfo describes one dependent of a node.
type DependentInfo struct {
	Identity Identity
	// Blocking: the dependent's reference to the owner has
	// blockOwnerDeletion set.
	Blocking           bool
	DeletingDependents bool
}

// BlockingDependents are the dependents whose reference blocks the
// owner's foreground deletion.
func (i NodeInfo) BlockingDependents() []DependentInfo {
	var out []DependentInfo
	for _, d := range i.Dependents {
		if d.Blocking {
			out = append(out, d)
		}
	}
	return out
}

// Node returns a copy of the node with uid.
func (g *Graph) Node(uid types.UID) (NodeInfo, bool) {
	n, ok := g.nodes[uid]
	if !ok {
		return NodeInfo{}, false
	}
	info := NodeInfo{Identity: n.id, Observed: n.observed, BeingDeleted: n.beingDeleted, DeletingDependents: n.deletingDependents}
	for _, d := range n.dependents {
		info.Dependents = append(info.Dependents, DependentInfo{Identity: d.id, Blocking: d.blocks(uid), DeletingDependents: d.deletingDependents})
	}
	slices.SortFunc(info.Dependents, func(x, y DependentInfo) int { return strings.Compare(string(x.Identity.UID), string(y.Identity.UID)) })
	return info, true
}

// IsAbsent reports whether the object id names is known not to exist.
func (g *Graph) IsAbsent(id Identity) bool { return g.absent.has(id) }

// MarkAbsent records that the object id names does not exist (UIDs are
// never reused, so this stays true).
func (g *Graph) MarkAbsent(id Identity) { g.absent.add(id) }

// absentCacheSize bounds the absent-owner cache, as upstream's.
const absentCacheSize = 500

// absentCache remembers identities verified absent, evicting the oldest.
type absentCache struct {
	set   map[Identity]bool
	order []Identity
	size  int
}

func newAbsentCache(size int) *absentCache {
	return &absentCache{set: map[Identity]bool{}, size: size}
}

func (c *absentCache) has(id Identity) bool { return c.set[id] }

func (c *absentCache) add(id Identity) {
	if c.set[id] {
		return
	}
	if len(c.order) >= c.size {
		delete(c.set, c.order[0])
		c.order = c.order[1:]
	}
	c.set[id] = true
	c.order = append(c.order, id)
}
