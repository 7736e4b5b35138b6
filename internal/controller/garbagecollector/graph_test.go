package garbagecollector

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func cm(ns, name string) Identity {
	return Identity{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name, UID: types.UID(name)}
}

func ref(owner Identity, block bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID}
	if block {
		r.BlockOwnerDeletion = &block
	}
	return r
}

func upsert(id Identity, owners ...metav1.OwnerReference) Event {
	return Event{Type: Upsert, Object: id, Owners: owners}
}

func deleting(id Identity, finalizer string, owners ...metav1.OwnerReference) Event {
	return Event{Type: Upsert, Object: id, Owners: owners, BeingDeleted: true, Finalizers: []string{finalizer}}
}

func del(id Identity) Event { return Event{Type: Delete, Object: id} }

func virtualDel(id Identity) Event { return Event{Type: Delete, Virtual: true, Object: id} }

func uids(ids ...Identity) []types.UID {
	var out []types.UID
	for _, id := range ids {
		out = append(out, id.UID)
	}
	return out
}

type step struct {
	ev         Event
	wantDelete []types.UID
	wantOrphan []types.UID
}

func TestGraph(t *testing.T) {
	owner, dep, dep2 := cm("ns", "owner"), cm("ns", "dep"), cm("ns", "dep2")
	node := Identity{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "n1"}
	otherNS := cm("other", "dep3")
	tests := []struct {
		name  string
		steps []step
		check func(t *testing.T, g *Graph)
	}{
		{
			name: "dependent first: virtual owner to verify, then observed",
			steps: []step{
				{ev: upsert(dep, ref(owner, false)), wantDelete: uids(owner)},
				{ev: upsert(owner)},
			},
			check: func(t *testing.T, g *Graph) {
				info, ok := g.Node(owner.UID)
				if !ok || !info.Observed || len(info.Dependents) != 1 || info.Dependents[0].Identity != dep {
					t.Errorf("owner node = %+v, %v", info, ok)
				}
			},
		},
		{
			name: "owner first: nothing to do",
			steps: []step{
				{ev: upsert(owner)},
				{ev: upsert(dep, ref(owner, true))},
			},
			check: func(t *testing.T, g *Graph) {
				info, _ := g.Node(owner.UID)
				if got := info.BlockingDependents(); len(got) != 1 || got[0].Identity != dep {
					t.Errorf("blocking dependents = %+v", got)
				}
			},
		},
		{
			name: "owner deleted: dependents are looked at, owner remembered absent",
			steps: []step{
				{ev: upsert(owner)},
				{ev: upsert(dep, ref(owner, false))},
				{ev: upsert(dep2, ref(owner, false))},
				{ev: del(owner), wantDelete: uids(dep, dep2)},
			},
			check: func(t *testing.T, g *Graph) {
				if _, ok := g.Node(owner.UID); ok {
					t.Error("owner still in graph")
				}
				if !g.IsAbsent(owner) {
					t.Error("owner not recorded absent")
				}
				if g.Len() != 2 {
					t.Errorf("graph has %d nodes, want 2", g.Len())
				}
			},
		},
		{
			name: "foreground deletion queues dependents and the owner",
			steps: []step{
				{ev: upsert(owner)},
				{ev: upsert(dep, ref(owner, true))},
				{ev: upsert(dep2, ref(owner, false))},
				{ev: deleting(owner, metav1.FinalizerDeleteDependents), wantDelete: uids(dep, dep2, owner)},
				// each dependent that goes makes the owner look again
				{ev: del(dep2), wantDelete: uids(owner)},
				{ev: del(dep), wantDelete: uids(owner)},
			},
			check: func(t *testing.T, g *Graph) {
				info, _ := g.Node(owner.UID)
				if !info.DeletingDependents || !info.BeingDeleted || len(info.Dependents) != 0 {
					t.Errorf("owner = %+v", info)
				}
			},
		},
		{
			name: "orphan deletion queues the owner for orphaning",
			steps: []step{
				{ev: upsert(owner)},
				{ev: upsert(dep, ref(owner, false))},
				{ev: deleting(owner, metav1.FinalizerOrphanDependents), wantOrphan: uids(owner)},
			},
		},
		{
			name: "a reference that stops blocking frees the owner",
			steps: []step{
				{ev: upsert(owner)},
				{ev: upsert(dep, ref(owner, true))},
				{ev: upsert(dep, ref(owner, false)), wantDelete: uids(owner)},
				{ev: upsert(dep, ref(owner, true))},
				{ev: upsert(dep), wantDelete: uids(owner)},
			},
			check: func(t *testing.T, g *Graph) {
				info, _ := g.Node(owner.UID)
				if len(info.Dependents) != 0 {
					t.Errorf("owner still has dependents %+v", info.Dependents)
				}
			},
		},
		{
			name: "a dependent created under a deleting owner is looked at",
			steps: []step{
				{ev: deleting(owner, metav1.FinalizerDeleteDependents), wantDelete: uids(owner)},
				{ev: upsert(dep, ref(owner, true)), wantDelete: uids(dep)},
			},
		},
		{
			name: "a virtual owner no one refers to is forgotten",
			steps: []step{
				{ev: upsert(dep, ref(owner, false)), wantDelete: uids(owner)},
				{ev: upsert(dep)},
			},
			check: func(t *testing.T, g *Graph) {
				if _, ok := g.Node(owner.UID); ok {
					t.Error("virtual owner still in graph")
				}
			},
		},
		{
			name: "virtual owner verified absent: removed, dependents looked at",
			steps: []step{
				{ev: upsert(dep, ref(owner, false)), wantDelete: uids(owner)},
				{ev: upsert(dep2, ref(owner, false))},
				{ev: virtualDel(owner), wantDelete: uids(dep, dep2)},
			},
			check: func(t *testing.T, g *Graph) {
				if _, ok := g.Node(owner.UID); ok {
					t.Error("virtual owner still in graph")
				}
			},
		},
		{
			name: "virtual owner named from two namespaces: absent in one, kept under the other",
			steps: []step{
				{ev: upsert(dep, ref(owner, false)), wantDelete: uids(owner)},
				{ev: upsert(otherNS, ref(owner, false))},
				{ev: virtualDel(owner), wantDelete: uids(dep, owner)},
			},
			check: func(t *testing.T, g *Graph) {
				info, ok := g.Node(owner.UID)
				if !ok || info.Observed || info.Identity.Namespace != "other" {
					t.Errorf("owner = %+v, %v; want virtual in namespace other", info, ok)
				}
				if !g.IsAbsent(owner) {
					t.Error("owner in ns not recorded absent")
				}
			},
		},
		{
			name: "virtual owner observed at other coordinates: dependents check again",
			steps: []step{
				{ev: upsert(dep, ref(owner, false)), wantDelete: uids(owner)},
				{ev: upsert(Identity{APIVersion: "v1", Kind: "ConfigMap", Namespace: "elsewhere", Name: "owner", UID: owner.UID}), wantDelete: uids(dep)},
			},
		},
		{
			name: "cluster-scoped owner of a namespaced dependent",
			steps: []step{
				{ev: upsert(dep, ref(node, false)), wantDelete: uids(node)},
				// observed without a namespace: the same object
				{ev: upsert(node)},
				{ev: del(node), wantDelete: uids(dep)},
			},
		},
		{
			name: "virtual delete at other coordinates does not remove an observed node",
			steps: []step{
				{ev: upsert(owner)},
				{ev: upsert(dep, ref(owner, false))},
				{ev: virtualDel(Identity{APIVersion: "v1", Kind: "ConfigMap", Namespace: "elsewhere", Name: "owner", UID: owner.UID})},
			},
			check: func(t *testing.T, g *Graph) {
				if _, ok := g.Node(owner.UID); !ok {
					t.Error("observed owner removed")
				}
			},
		},
		{
			name: "self reference is ignored",
			steps: []step{
				{ev: deleting(owner, metav1.FinalizerDeleteDependents, ref(owner, true)), wantDelete: uids(owner)},
			},
			check: func(t *testing.T, g *Graph) {
				info, _ := g.Node(owner.UID)
				if len(info.BlockingDependents()) != 0 {
					t.Errorf("owner blocks on itself: %+v", info)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGraph()
			for i, s := range tt.steps {
				a := g.Apply(s.ev)
				if !reflect.DeepEqual(a.AttemptToDelete, s.wantDelete) || !reflect.DeepEqual(a.AttemptToOrphan, s.wantOrphan) {
					t.Fatalf("step %d: actions = %+v, want delete %v orphan %v", i, a, s.wantDelete, s.wantOrphan)
				}
			}
			if tt.check != nil {
				tt.check(t, g)
			}
		})
	}
}

func TestAbsentCacheEvictsOldest(t *testing.T) {
	c := newAbsentCache(2)
	a, b, d := cm("", "a"), cm("", "b"), cm("", "d")
	c.add(a)
	c.add(b)
	c.add(a) // already there: no reordering, no growth
	c.add(d)
	if c.has(a) || !c.has(b) || !c.has(d) {
		t.Errorf("cache = %v", c.set)
	}
}

func TestDiffOwners(t *testing.T) {
	a, b, c := cm("", "a"), cm("", "b"), cm("", "c")
	added, removed, unblocked := diffOwners(
		[]metav1.OwnerReference{ref(a, true), ref(b, true), ref(c, false)},
		[]metav1.OwnerReference{ref(b, false), ref(c, true), ref(cm("", "d"), false)})
	if len(added) != 1 || added[0].UID != "d" {
		t.Errorf("added = %v", added)
	}
	if len(removed) != 1 || removed[0].UID != "a" {
		t.Errorf("removed = %v", removed)
	}
	if !reflect.DeepEqual(unblocked, []types.UID{"a", "b"}) {
		t.Errorf("unblocked = %v", unblocked)
	}
}
