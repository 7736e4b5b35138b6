package admission

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

// Reinvocation, as upstream's: when a mutating webhook or a
// MutatingAdmissionPolicy changes the object, the mutating phase runs a
// second time, once — every plugin's Mutate again, while webhooks and
// policies call again only those with reinvocationPolicy IfNeeded that ran
// before a later change of the object (a change by another webhook or
// policy in the first round, or by any plugin since their plugin last ran).

// reinvocation is one request's reinvocation state.
type reinvocation struct {
	// requested: a webhook or policy changed the object.
	requested bool
	// second: the mutating phase is in its second run.
	second  bool
	plugins map[string]*Reinvocable
}

// Reinvoking reports whether the mutating phase is running a second time.
func (a *Attributes) Reinvoking() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reinvocation.second
}

// Reinvocable is the reinvocation state of one plugin that calls many
// mutators (webhooks or policies), for one request.
type Reinvocable struct {
	a *Attributes
	// lastOutput is the object as the plugin last left it.
	lastOutput runtime.Object
	// invoked are the IfNeeded mutators called since the object last
	// changed; reinvoke those to call in the second run.
	invoked, reinvoke map[string]bool
}

// Reinvocable is plugin's reinvocation state for this request; call it
// at the start of the plugin's Mutate and End once it returns.
func (a *Attributes) Reinvocable(plugin string) *Reinvocable {
	a.mu.Lock()
	r := a.reinvocation.plugins[plugin]
	if r == nil {
		if a.reinvocation.plugins == nil {
			a.reinvocation.plugins = map[string]*Reinvocable{}
		}
		r = &Reinvocable{a: a, invoked: map[string]bool{}, reinvoke: map[string]bool{}}
		a.reinvocation.plugins[plugin] = r
	}
	second := a.reinvocation.second
	a.mu.Unlock()
	if second && !apiequality.Semantic.DeepEqual(r.lastOutput, a.Object) {
		// Other plugins changed the object since this one last ran.
		r.requireReinvoking()
	}
	return r
}

// End records the object as the plugin leaves it.
func (r *Reinvocable) End() {
	if r.a.Object == nil {
		r.lastOutput = nil
		return
	}
	r.lastOutput = r.a.Object.DeepCopyObject()
}

// ShouldCall reports whether the mutator with key is to be called: always
// in the first run, in the second only if it is to be reinvoked.
func (r *Reinvocable) ShouldCall(key string) bool {
	return !r.a.Reinvoking() || r.reinvoke[key]
}

// Called records a call of the mutator with key: whether it changed the
// object and whether it may be reinvoked (IfNeeded).
func (r *Reinvocable) Called(key string, changed, ifNeeded bool) {
	if changed {
		r.Changed()
	}
	if ifNeeded {
		r.invoked[key] = true
	}
}

// Changed records that the plugin changed the object: the reinvocable
// mutators called before are to be called again, and the mutating phase
// to run a second time.
func (r *Reinvocable) Changed() {
	r.requireReinvoking()
	r.a.mu.Lock()
	r.a.reinvocation.requested = true
	r.a.mu.Unlock()
}

func (r *Reinvocable) requireReinvoking() {
	for k := range r.invoked {
		r.reinvoke[k] = true
	}
	clear(r.invoked)
}

// startSecondRun reports whether the mutating phase is to run again and
// if so marks it as running again.
func (a *Attributes) startSecondRun() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.reinvocation.requested || a.reinvocation.second {
		return false
	}
	a.reinvocation.second = true
	return true
}

// mutateOnce runs the mutating phase of every plugin that handles a once.
func (c Chain) mutateOnce(ctx context.Context, a *Attributes) error {
	for i := range c {
		if p := &c[i]; p.Mutate != nil && p.Handles(a) {
			if err := p.Mutate(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}
