package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Plugin is one admission plugin: the resources it applies to and what it
// does at each point of a write. Nil functions do nothing.
type Plugin struct {
	Name string
	// Resources it applies to.
	Resources []schema.GroupResource
	// Admit may change a new object: it runs on a create after defaulting,
	// before validation, with the namespace set and no UID yet (the name
	// is still empty under generateName), on dry runs too. An API error
	// rejects the create.
	Admit func(ctx context.Context, obj runtime.Object) error
	// BeforeCreate runs after validation, before the object is stored, not
	// on dry runs; undo (if not nil) is called if storing fails.
	BeforeCreate func(ctx context.Context, obj runtime.Object) (undo func(), err error)
	// BeforeUpdate runs after validation of an update.
	BeforeUpdate func(ctx context.Context, obj, old runtime.Object) error
	// AfterDelete runs once the object is gone from storage.
	AfterDelete func(ctx context.Context, obj runtime.Object)
}

func (p *Plugin) appliesTo(gr schema.GroupResource) bool {
	for _, r := range p.Resources {
		if r == gr {
			return true
		}
	}
	return false
}

// Chain is the ordered list of plugins.
type Chain []Plugin

// Admit runs the mutating plugins of gr on a new object, stopping at the
// first error.
func (c Chain) Admit(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	for i := range c {
		if p := &c[i]; p.Admit != nil && p.appliesTo(gr) {
			if err := p.Admit(ctx, obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// BeforeCreate runs the BeforeCreate steps of gr; on an error it undoes
// the steps that ran. The undo returned reverses them all.
func (c Chain) BeforeCreate(ctx context.Context, gr schema.GroupResource, obj runtime.Object) (undo func(), err error) {
	var undos []func()
	undo = func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	for i := range c {
		p := &c[i]
		if p.BeforeCreate == nil || !p.appliesTo(gr) {
			continue
		}
		u, err := p.BeforeCreate(ctx, obj)
		if err != nil {
			undo()
			return nil, err
		}
		if u != nil {
			undos = append(undos, u)
		}
	}
	return undo, nil
}

// BeforeUpdate runs the BeforeUpdate steps of gr, stopping at the first
// error.
func (c Chain) BeforeUpdate(ctx context.Context, gr schema.GroupResource, obj, old runtime.Object) error {
	for i := range c {
		if p := &c[i]; p.BeforeUpdate != nil && p.appliesTo(gr) {
			if err := p.BeforeUpdate(ctx, obj, old); err != nil {
				return err
			}
		}
	}
	return nil
}

// AfterDelete runs the AfterDelete steps of gr.
func (c Chain) AfterDelete(ctx context.Context, gr schema.GroupResource, obj runtime.Object) {
	for i := range c {
		if p := &c[i]; p.AfterDelete != nil && p.appliesTo(gr) {
			p.AfterDelete(ctx, obj)
		}
	}
}
