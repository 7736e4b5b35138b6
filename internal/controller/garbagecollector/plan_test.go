package garbagecollector

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPlanReferences(t *testing.T) {
	a, b := ref(cm("ns", "a"), false), ref(cm("ns", "b"), true)
	leaf := []DependentInfo(nil)
	withDeps := []DependentInfo{{Identity: cm("ns", "child")}}
	withDeletingDep := []DependentInfo{{Identity: cm("ns", "child"), DeletingDependents: true}}
	tests := []struct {
		name       string
		refs       references
		finalizers []string
		deps       []DependentInfo
		want       Plan
	}{
		{"all owners exist", references{solid: []metav1.OwnerReference{a, b}}, nil, leaf, Plan{kind: actNone}},
		{"one owner gone: drop its reference", references{solid: []metav1.OwnerReference{a}, dangling: []metav1.OwnerReference{b}}, nil, leaf,
			Plan{kind: actRemoveReferences, removeUIDs: []types.UID{b.UID}}},
		{"solid owner and a waiting one: drop the waiting reference", references{solid: []metav1.OwnerReference{a}, waiting: []metav1.OwnerReference{b}}, nil, withDeps,
			Plan{kind: actRemoveReferences, removeUIDs: []types.UID{b.UID}}},
		{"all owners gone: background", references{dangling: []metav1.OwnerReference{a, b}}, nil, withDeps,
			Plan{kind: actDelete, policy: metav1.DeletePropagationBackground}},
		{"all owners gone, own orphan finalizer honoured", references{dangling: []metav1.OwnerReference{a}}, []string{metav1.FinalizerOrphanDependents}, leaf,
			Plan{kind: actDelete, policy: metav1.DeletePropagationOrphan}},
		{"all owners gone, own foreground finalizer honoured", references{dangling: []metav1.OwnerReference{a}}, []string{metav1.FinalizerDeleteDependents}, leaf,
			Plan{kind: actDelete, policy: metav1.DeletePropagationForeground}},
		{"owner waiting, no dependents: background", references{waiting: []metav1.OwnerReference{b}}, nil, leaf,
			Plan{kind: actDelete, policy: metav1.DeletePropagationBackground}},
		{"owner waiting, with dependents: foreground", references{waiting: []metav1.OwnerReference{b}, dangling: []metav1.OwnerReference{a}}, nil, withDeps,
			Plan{kind: actDelete, policy: metav1.DeletePropagationForeground}},
		{"owner waiting, dependent deleting too: unblock, foreground", references{waiting: []metav1.OwnerReference{b}}, nil, withDeletingDep,
			Plan{kind: actDelete, policy: metav1.DeletePropagationForeground, unblock: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planReferences(tt.refs, tt.finalizers, tt.deps); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("planReferences = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAddExisting(t *testing.T) {
	now := metav1.Now()
	var r references
	r.addExisting(ref(cm("ns", "a"), false), &metav1.ObjectMeta{})
	r.addExisting(ref(cm("ns", "b"), false), &metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{metav1.FinalizerOrphanDependents}})
	r.addExisting(ref(cm("ns", "c"), false), &metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{metav1.FinalizerDeleteDependents}})
	if len(r.solid) != 2 || len(r.waiting) != 1 || r.waiting[0].Name != "c" {
		t.Errorf("references = %+v", r)
	}
}

func TestPlan(t *testing.T) {
	a, b := ref(cm("ns", "a"), false), ref(cm("ns", "b"), true)
	child, deletingChild := cm("ns", "child"), cm("ns", "deleting-child")
	tests := []struct {
		name string
		st   State
		want Plan
	}{
		{"deleting dependents, none blocks: the finalizer goes", State{DeletingDependents: true}, Plan{kind: actRemoveFinalizer}},
		{"deleting dependents: those blocking are looked at, unless deleting theirs",
			State{DeletingDependents: true, Blocking: []DependentInfo{{Identity: child}, {Identity: deletingChild, DeletingDependents: true}}},
			Plan{kind: actAttemptDependents, attempt: []types.UID{child.UID}}},
		{"an object with a live owner stays", State{Refs: references{solid: []metav1.OwnerReference{a}}}, Plan{kind: actNone}},
		{"an object whose owners are gone goes", State{Refs: references{dangling: []metav1.OwnerReference{a, b}}},
			Plan{kind: actDelete, policy: metav1.DeletePropagationBackground}},
	}
	for _, tt := range tests {
		if got := plan(tt.st); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: plan = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
