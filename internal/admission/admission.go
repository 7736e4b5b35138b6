package admission

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Plugin is one admission plugin: the requests it applies to and what it
// does at each point of a write. Nil functions do nothing.
//
// Mutate and Validate are upstream's two admission phases, run for every
// operation the plugin handles (CREATE, UPDATE, DELETE, CONNECT), dry
// runs included: every plugin's Mutate in chain order after defaulting,
// then the resource's validation, then every plugin's Validate. The first
// error refuses the request; wrap plain errors with Forbidden.
//
// BeforeCreate, BeforeUpdate, AfterUpdate and AfterDelete are storage
// hooks, not upstream admission: what a resource's REST storage does
// around the write itself (reserving a ClusterIP with an undo), never on
// dry runs (which would reserve, if only for a moment).
type Plugin struct {
	Name string
	// Resources it applies to; empty means every resource.
	Resources []schema.GroupResource
	// Operations it applies to; empty means every operation.
	Operations []Operation
	// Subresources it sees besides the main resource ("*": all of them);
	// by default requests to a subresource pass it by.
	Subresources []string
	Mutate       MutateFunc
	Validate     ValidateFunc

	// BeforeCreate runs after validation, before the object is stored;
	// undo (if not nil) is called if storing fails.
	BeforeCreate func(ctx context.Context, obj runtime.Object) (undo func(), err error)
	// BeforeUpdate runs after validation of an update, before it is
	// stored; undo as BeforeCreate's (also when the update is retried
	// after a conflict, or changes nothing).
	BeforeUpdate func(ctx context.Context, obj, old runtime.Object) (undo func(), err error)
	// AfterUpdate runs once an update is stored (to let go of what old
	// held and obj does not).
	AfterUpdate func(ctx context.Context, obj, old runtime.Object)
	// AfterDelete runs once the object is gone from storage.
	AfterDelete func(ctx context.Context, obj runtime.Object)
}

func (p *Plugin) appliesTo(gr schema.GroupResource) bool {
	if len(p.Resources) == 0 {
		return true
	}
	for _, r := range p.Resources {
		if r == gr {
			return true
		}
	}
	return false
}

// Handles reports whether the plugin applies to a request.
func (p *Plugin) Handles(a *Attributes) bool {
	if !p.appliesTo(a.GroupResource()) {
		return false
	}
	if len(p.Operations) > 0 && !slices.Contains(p.Operations, a.Operation) {
		return false
	}
	if a.Subresource != "" && !slices.Contains(p.Subresources, a.Subresource) && !slices.Contains(p.Subresources, "*") {
		return false
	}
	return true
}

// Chain is the ordered list of plugins.
type Chain []Plugin

// Mutate runs the mutating phase of every plugin that handles a, in order,
// stopping at the first error, and runs it once more if a webhook or
// policy changed the object (see Reinvocable).
func (c Chain) Mutate(ctx context.Context, a *Attributes) error {
	if err := c.mutateOnce(ctx, a); err != nil {
		return err
	}
	if a.startSecondRun() {
		return c.mutateOnce(ctx, a)
	}
	return nil
}

// Validate runs the validating phase of every plugin that handles a, in
// order, stopping at the first error.
func (c Chain) Validate(ctx context.Context, a *Attributes) error {
	for i := range c {
		if p := &c[i]; p.Validate != nil && p.Handles(a) {
			if err := p.Validate(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// BeforeCreate runs the BeforeCreate steps of gr; on an error it undoes
// the steps that ran. The undo returned reverses them all.
func (c Chain) BeforeCreate(ctx context.Context, gr schema.GroupResource, obj runtime.Object) (undo func(), err error) {
	return c.before(gr, func(p *Plugin) (func(), error) {
		if p.BeforeCreate == nil {
			return nil, nil
		}
		return p.BeforeCreate(ctx, obj)
	})
}

// BeforeUpdate runs the BeforeUpdate steps of gr, as BeforeCreate.
func (c Chain) BeforeUpdate(ctx context.Context, gr schema.GroupResource, obj, old runtime.Object) (undo func(), err error) {
	return c.before(gr, func(p *Plugin) (func(), error) {
		if p.BeforeUpdate == nil {
			return nil, nil
		}
		return p.BeforeUpdate(ctx, obj, old)
	})
}

// before runs one kind of Before hook (step) of each plugin of gr in
// order, stopping at the first error after undoing the steps that ran.
func (c Chain) before(gr schema.GroupResource, step func(*Plugin) (func(), error)) (undo func(), err error) {
	var undos []func()
	undo = func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	for i := range c {
		p := &c[i]
		if !p.appliesTo(gr) {
			continue
		}
		u, err := step(p)
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

// AfterUpdate runs the AfterUpdate steps of gr.
func (c Chain) AfterUpdate(ctx context.Context, gr schema.GroupResource, obj, old runtime.Object) {
	for i := range c {
		if p := &c[i]; p.AfterUpdate != nil && p.appliesTo(gr) {
			p.AfterUpdate(ctx, obj, old)
		}
	}
}

// AfterDelete runs the AfterDelete steps of gr.
func (c Chain) AfterDelete(ctx context.Context, gr schema.GroupResource, obj runtime.Object) {
	for i := range c {
		if p := &c[i]; p.AfterDelete != nil && p.appliesTo(gr) {
			p.AfterDelete(ctx, obj)
		}
	}
}
