package policy

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	upstream "k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/policy/matching"
)

// MutatingName is the name of the MutatingAdmissionPolicy plugin.
const MutatingName = "MutatingAdmissionPolicy"

// compiledMutating is one generation of a mutating policy compiled: its
// matchConditions and one patcher per mutation, in order.
type compiledMutating struct {
	generation int64
	compiler   *plugincel.CompositedCompiler
	matcher    matchconditions.Matcher
	patchers   []patch.Patcher
	// applyConfig[i]: patchers[i] is an ApplyConfiguration, which needs
	// the kind's schema.
	applyConfig []bool
	err         error
}

func compileMutating(p *admissionv1.MutatingAdmissionPolicy) compiledMutating {
	out := compiledMutating{generation: p.Generation}
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	c, err := plugincel.NewCompositedCompiler(baseEnv)
	if err != nil {
		out.err = err
		return out
	}
	out.compiler = c
	vars := make([]plugincel.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		vars[i] = &variable{Name: v.Name, Expression: v.Expression}
	}
	c.CompileAndStoreVariables(vars, opts, environment.StoredExpressions)
	if conds := p.Spec.MatchConditions; len(conds) > 0 {
		exprs := make([]plugincel.ExpressionAccessor, len(conds))
		for i := range conds {
			exprs[i] = (*matchconditions.MatchCondition)(&conds[i])
		}
		out.matcher = matchconditions.NewMatcher(c.CompileCondition(exprs, opts, environment.StoredExpressions),
			p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	for _, m := range p.Spec.Mutations {
		switch {
		case m.PatchType == admissionv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			out.patchers = append(out.patchers, patch.NewJSONPatcher(c.CompileMutatingEvaluator(
				&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchOpts, environment.StoredExpressions)))
			out.applyConfig = append(out.applyConfig, false)
		case m.PatchType == admissionv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			out.patchers = append(out.patchers, patch.NewApplyConfigurationPatcher(c.CompileMutatingEvaluator(
				&patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchOpts, environment.StoredExpressions)))
			out.applyConfig = append(out.applyConfig, true)
		default:
			out.err = fmt.Errorf("mutation of unsupported patchType %q", m.PatchType)
		}
	}
	return out
}

// Mutating is the MutatingAdmissionPolicy plugin, reading from the same
// Source as the validating one.
type Mutating struct {
	validating *Validating
	objects    upstream.ObjectInterfaces
}

// NewMutating returns the mutating plugin over v's source and authorizer.
func NewMutating(v *Validating) *Mutating {
	return &Mutating{validating: v, objects: upstream.NewObjectInterfacesFromScheme(clientgoscheme.Scheme)}
}

// Plugin is the plugin's place in the admission chain: creates, updates
// and connects (mutating policies never see deletes) of every resource.
func (m *Mutating) Plugin() admission.Plugin {
	return admission.Plugin{Name: MutatingName, Subresources: []string{"*"},
		Operations: []admission.Operation{admission.Create, admission.Update, admission.Connect}, Mutate: m.Mutate}
}

// policyError is a mutating policy's failure, in upstream's words.
type policyError struct {
	policy, binding string
	failurePolicy   *admissionv1.FailurePolicyType
	err             error
}

func (e policyError) Error() string {
	if e.binding != "" {
		return fmt.Sprintf("policy '%s' with binding '%s' denied request: %s", e.policy, e.binding, e.err)
	}
	return fmt.Sprintf("policy %q denied request: %s", e.policy, e.err)
}

// Mutate applies every matching policy's mutations to the request's
// object, in policy name order. A change makes the chain's mutating phase
// run again (admission.Reinvocable), in which a policy whose
// reinvocationPolicy is IfNeeded runs once more if the object changed
// after it ran.
func (m *Mutating) Mutate(ctx context.Context, a *admission.Attributes) error {
	if matching.IsExempt(a.Kind) || a.Object == nil {
		return nil
	}
	src, err := m.validating.ready(ctx)
	if err != nil {
		return admission.Forbidden(a, err)
	}
	policies := src.MutatingPolicies()
	if len(policies) == 0 {
		return nil
	}
	state := a.Reinvocable(MutatingName)
	defer state.End()
	ev := &evaluation{ctx: ctx, a: a, src: src, authz: m.validating.authz, req: matchRequest(a)}
	var errs []policyError
	for _, p := range policies {
		if !state.ShouldCall(p.Name) {
			continue
		}
		changed, perrs := m.policy(ev, p)
		errs = append(errs, perrs...)
		state.Called(p.Name, changed, p.Spec.ReinvocationPolicy == admissionv1.IfNeededReinvocationPolicy)
	}
	var failed []policyError
	for _, e := range errs {
		if e.failurePolicy == nil || *e.failurePolicy != admissionv1.Ignore {
			failed = append(failed, e)
		}
	}
	if len(failed) > 0 {
		se := admission.Forbidden(a, errors.New("admission request denied by policy")).(*apierrors.StatusError)
		se.ErrStatus.Message = failed[0].Error()
		for _, e := range failed {
			se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{Message: e.Error()})
		}
		return se
	}
	if ev.upstream == nil || !ev.upstream.Dirty {
		return nil
	}
	obj, err := fromVersioned(ev.upstream.VersionedObject.Object(), a.Object)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to convert object: %w", err))
	}
	a.Object = obj
	return nil
}

// policy runs one policy's bindings; changed reports whether it changed
// the object.
func (m *Mutating) policy(ev *evaluation, p *admissionv1.MutatingAdmissionPolicy) (changed bool, errs []policyError) {
	fail := func(binding string, err error) {
		errs = append(errs, policyError{policy: p.Name, binding: binding, failurePolicy: p.Spec.FailurePolicy, err: err})
	}
	res, err := matching.Matches(p.Spec.MatchConstraints, ev.req, ev.namespaceLabels, nil)
	if err != nil {
		fail("", fmt.Errorf("failed to configure policy: %w", err))
		return false, errs
	}
	if !res.Matches {
		return false, nil
	}
	c := ev.src.Mutator(p)
	if c.err != nil {
		fail("", fmt.Errorf("failed to configure policy: %w", c.err))
		return false, errs
	}
	for _, b := range ev.src.MutatingBindings(p.Name) {
		bm, err := matching.Matches(b.Spec.MatchResources, ev.req, ev.namespaceLabels, nil)
		if err != nil {
			fail(b.Name, fmt.Errorf("failed to configure binding: %w", err))
			continue
		}
		if !bm.Matches {
			continue
		}
		params, err := ev.src.Params(ev.ctx, p.Spec.ParamKind, b.Spec.ParamRef, ev.a.Namespace)
		if err != nil {
			fail(b.Name, fmt.Errorf("failed to configure binding: %w", err))
			continue
		}
		ns, err := ev.namespaceObject()
		if err != nil {
			fail(b.Name, fmt.Errorf("failed to configure binding: %w", err))
			continue
		}
		for _, param := range params {
			ch, err := m.invoke(ev, c, res.Resource, param, ns)
			changed = changed || ch
			if err != nil {
				fail(b.Name, err)
			}
		}
	}
	return changed, errs
}

// invoke applies one policy's mutations for one binding and param.
func (m *Mutating) invoke(ev *evaluation, c *compiledMutating, resource schema.GroupVersionResource, param runtime.Object, ns *corev1.Namespace) (bool, error) {
	ctx := ev.ctx
	if c.compiler != nil {
		ctx = c.compiler.CreateContext(ctx)
	}
	va := ev.versioned()
	authz := ev.authorizer()
	if c.matcher != nil {
		r := c.matcher.Match(ctx, va, param, authz)
		if r.Error != nil {
			return false, r.Error
		}
		if !r.Matches {
			return false, nil
		}
	}
	before := va.VersionedObject.Object()
	for i, p := range c.patchers {
		var tc managedfields.TypeConverter
		if c.applyConfig[i] {
			if ev.src.types != nil {
				tc = ev.src.types.GetTypeConverter(va.VersionedKind)
			}
			if tc == nil {
				return false, apierrors.NewServiceUnavailable(fmt.Sprintf("Resource kind %s not found. There can be a delay between when CustomResourceDefinitions are created and when they are available.", va.VersionedKind))
			}
		}
		obj, err := p.Patch(ctx, patch.Request{
			MatchedResource: resource, VersionedAttributes: va, ObjectInterfaces: m.objects,
			OptionalVariables: plugincel.OptionalVariableBindings{VersionedParams: param, Authorizer: authz},
			Namespace:         ns, TypeConverter: tc,
		}, celconfig.RuntimeCELCostBudget)
		if err != nil {
			return false, err
		}
		va.UpdateObject(obj)
	}
	return !equality.Semantic.DeepEqual(before, va.VersionedObject.Object()), nil
}

// fromVersioned turns the mutated object (unstructured, as the CEL
// patchers work on it) back into the Go type of the request's object.
func fromVersioned(mutated, original runtime.Object) (runtime.Object, error) {
	u, ok := mutated.(*unstructured.Unstructured)
	if !ok {
		return mutated, nil
	}
	if _, ok := original.(*unstructured.Unstructured); ok {
		return u, nil
	}
	typed := reflect.New(reflect.TypeOf(original).Elem()).Interface().(runtime.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		return nil, err
	}
	// The Go object carries no apiVersion and kind, as the decoded one.
	typed.GetObjectKind().SetGroupVersionKind(original.GetObjectKind().GroupVersionKind())
	return typed, nil
}
