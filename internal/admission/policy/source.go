package policy

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/reconcile"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// byPolicyName indexes bindings by spec.policyName.
const byPolicyName = "policyName"

// Source is what the plugin reads: policies, bindings, namespaces and
// param objects, from informers over the API; and each policy's compiled
// form, made once per generation.
type Source struct {
	ctx      context.Context
	dynamic  dynamic.Interface
	mapper   meta.ResettableRESTMapper
	policies cache.Indexer
	bindings cache.Indexer
	// mutating policies and their bindings
	mpolicies  cache.Indexer
	mbindings  cache.Indexer
	namespaces admission.Namespaces
	types      patch.TypeConverterManager
	synced     admission.Synced

	mu        sync.Mutex
	compiled  map[types.UID]compiledPolicy
	mcompiled map[types.UID]compiledMutating
	params    map[schema.GroupVersionKind]*paramInformer
}

type compiledPolicy struct {
	generation int64
	validator  validating.Validator
}

// paramInformer watches one paramKind's objects.
type paramInformer struct {
	resource   schema.GroupVersionResource
	namespaced bool
	informer   cache.SharedIndexInformer
}

// NewSource reads policies, bindings and namespaces from f's informers
// (register before f starts; the caller starts f) and a namespace not in
// the informer yet through cs; param objects through informers of its own
// over cfg (the loopback client), started as policies name them. A type
// checker on the same informers writes each policy's
// status.typeChecking. What it runs stops with ctx.
func NewSource(ctx context.Context, cfg *rest.Config, f informers.SharedInformerFactory, cs kubernetes.Interface, log *slog.Logger,
	builtinTypes func() managedfields.TypeConverter) (*Source, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	pInf := f.Admissionregistration().V1().ValidatingAdmissionPolicies().Informer()
	bInf := f.Admissionregistration().V1().ValidatingAdmissionPolicyBindings().Informer()
	mpInf := f.Admissionregistration().V1().MutatingAdmissionPolicies().Informer()
	mbInf := f.Admissionregistration().V1().MutatingAdmissionPolicyBindings().Informer()
	if err := bInf.AddIndexers(cache.Indexers{byPolicyName: bindingPolicyName}); err != nil {
		return nil, err
	}
	if err := mbInf.AddIndexers(cache.Indexers{byPolicyName: bindingPolicyName}); err != nil {
		return nil, err
	}
	ns := f.Core().V1().Namespaces()
	s := &Source{
		ctx: ctx, dynamic: dyn,
		mapper:   restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		policies: pInf.GetIndexer(), bindings: bInf.GetIndexer(), namespaces: admission.Namespaces{Lister: ns.Lister(), Client: cs},
		mpolicies: mpInf.GetIndexer(), mbindings: mbInf.GetIndexer(),
		// Schemas of the kinds ApplyConfiguration mutations patch: the
		// built-in ones', if given, else from the API server's OpenAPI.
		types:    patch.NewTypeConverterManager(lazyTypes(builtinTypes), dc.OpenAPIV3()),
		synced:   admission.Synced{pInf.HasSynced, bInf.HasSynced, mpInf.HasSynced, mbInf.HasSynced, ns.Informer().HasSynced},
		compiled: map[types.UID]compiledPolicy{}, mcompiled: map[types.UID]compiledMutating{},
		params: map[schema.GroupVersionKind]*paramInformer{},
	}
	// A policy's param informer starts when the policy is seen, so that
	// it has synced by the first request the policy judges.
	for _, inf := range []cache.SharedIndexInformer{pInf, mpInf} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.warmParams(obj) },
			UpdateFunc: func(_, obj any) { s.warmParams(obj) },
		}); err != nil {
			return nil, err
		}
	}
	// types polls the OpenAPI index once a mutating policy exists:
	// building the server's whole OpenAPI v3 is the dearest thing a
	// starting server would otherwise do.
	startTypes := sync.OnceFunc(func() { go s.types.Run(ctx) })
	if _, err := mpInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { startTypes() }}); err != nil {
		return nil, err
	}
	tc, err := newTypeChecker(cs, dc, s.mapper, pInf, log)
	if err != nil {
		return nil, err
	}
	go tc.run(ctx)
	return s, nil
}

// HasSynced reports whether policies, bindings and namespaces are read.
func (s *Source) HasSynced() bool { return s.synced.HasSynced() }

func bindingPolicyName(obj any) ([]string, error) {
	switch b := obj.(type) {
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		return []string{b.Spec.PolicyName}, nil
	case *admissionv1.MutatingAdmissionPolicyBinding:
		return []string{b.Spec.PolicyName}, nil
	}
	return nil, nil
}

// byName is objs of type T sorted by name.
func byName[T metav1.Object](objs []any) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// Policies are the validating admission policies, by name.
func (s *Source) Policies() []*admissionv1.ValidatingAdmissionPolicy {
	return byName[*admissionv1.ValidatingAdmissionPolicy](s.policies.List())
}

// Bindings are the bindings of the validating policy named policy, by name.
func (s *Source) Bindings(policy string) []*admissionv1.ValidatingAdmissionPolicyBinding {
	objs, _ := s.bindings.ByIndex(byPolicyName, policy)
	return byName[*admissionv1.ValidatingAdmissionPolicyBinding](objs)
}

// MutatingPolicies are the mutating admission policies, by name.
func (s *Source) MutatingPolicies() []*admissionv1.MutatingAdmissionPolicy {
	if s.mpolicies == nil {
		return nil
	}
	return byName[*admissionv1.MutatingAdmissionPolicy](s.mpolicies.List())
}

// MutatingBindings are the bindings of the mutating policy named policy.
func (s *Source) MutatingBindings(policy string) []*admissionv1.MutatingAdmissionPolicyBinding {
	objs, _ := s.mbindings.ByIndex(byPolicyName, policy)
	return byName[*admissionv1.MutatingAdmissionPolicyBinding](objs)
}

// Mutator is p compiled, made again when its generation changes.
func (s *Source) Mutator(p *admissionv1.MutatingAdmissionPolicy) *compiledMutating {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.mcompiled[p.UID]; ok && c.generation == p.Generation {
		return &c
	}
	c := compileMutating(p)
	s.mcompiled[p.UID] = c
	return &c
}

// Validator is p compiled, made again when its generation changes.
func (s *Source) Validator(p *admissionv1.ValidatingAdmissionPolicy) validating.Validator {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.compiled[p.UID]; ok && c.generation == p.Generation {
		return c.validator
	}
	v := compile(p)
	s.compiled[p.UID] = compiledPolicy{generation: p.Generation, validator: v}
	return v
}

// Namespace reads a namespace from the cache, or from the API when the
// cache has not seen it yet.
func (s *Source) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return s.namespaces.Get(ctx, name)
}

func (s *Source) warmParams(obj any) {
	switch p := obj.(type) {
	case *admissionv1.ValidatingAdmissionPolicy:
		if p.Spec.ParamKind != nil {
			_, _ = s.paramsFor(p.Spec.ParamKind)
		}
	case *admissionv1.MutatingAdmissionPolicy:
		if p.Spec.ParamKind != nil {
			_, _ = s.paramsFor(p.Spec.ParamKind)
		}
	}
}

// paramsFor returns the informer of a paramKind's objects, starting it the
// first time.
func (s *Source) paramsFor(k *admissionv1.ParamKind) (*paramInformer, error) {
	gv, err := schema.ParseGroupVersion(k.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("failed to parse paramKind APIVersion: %w", err)
	}
	gvk := gv.WithKind(k.Kind)
	s.mu.Lock()
	defer s.mu.Unlock()
	if pi, ok := s.params[gvk]; ok {
		return pi, nil
	}
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// A kind served since discovery was read (a new CRD).
		s.mapper.Reset()
		if m, err = s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
		}
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(s.dynamic, m.Resource, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	go inf.Run(s.ctx.Done())
	pi := &paramInformer{resource: m.Resource, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace, informer: inf}
	s.params[gvk] = pi
	return pi, nil
}

// Params are the param objects a binding names for a request in
// namespace, as upstream collects them: one nil param when the policy
// or binding uses none; an error when the binding's configuration cannot
// be used or (parameterNotFoundAction Deny) no param is found.
func (s *Source) Params(ctx context.Context, kind *admissionv1.ParamKind, ref *admissionv1.ParamRef, namespace string) ([]runtime.Object, error) {
	if kind == nil || ref == nil {
		return []runtime.Object{nil}, nil
	}
	pi, err := s.paramsFor(kind)
	if err != nil {
		return nil, err
	}
	paramNamespace := ""
	if pi.namespaced {
		paramNamespace = namespace
		if ref.Namespace != "" {
			paramNamespace = ref.Namespace
		} else if paramNamespace == "" {
			return nil, fmt.Errorf("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	} else if ref.Namespace != "" {
		return nil, fmt.Errorf("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if !reconcile.WaitForCacheSync(waitCtx, pi.informer.HasSynced) {
		return nil, fmt.Errorf("paramKind kind `%v` not yet synced to use for admission", kind.String())
	}
	var params []runtime.Object
	switch {
	case ref.Name != "":
		key := ref.Name
		if paramNamespace != "" {
			key = paramNamespace + "/" + ref.Name
		}
		obj, found, err := pi.informer.GetIndexer().GetByKey(key)
		if err != nil {
			return nil, err
		}
		if !found {
			// Created a moment ago and not yet in the cache: ask the API.
			var r dynamic.ResourceInterface = s.dynamic.Resource(pi.resource)
			if paramNamespace != "" {
				r = s.dynamic.Resource(pi.resource).Namespace(paramNamespace)
			}
			u, err := r.Get(ctx, ref.Name, metav1.GetOptions{})
			switch {
			case err == nil:
				obj, found = u, true
			case !apierrors.IsNotFound(err):
				return nil, err
			}
		}
		if found {
			params = append(params, obj.(runtime.Object))
		}
	case ref.Selector != nil:
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, err
		}
		objs := pi.informer.GetIndexer().List()
		if paramNamespace != "" {
			objs, _ = pi.informer.GetIndexer().ByIndex(cache.NamespaceIndex, paramNamespace)
		}
		for _, o := range objs {
			if m, err := meta.Accessor(o); err == nil && sel.Matches(labels.Set(m.GetLabels())) {
				params = append(params, o.(runtime.Object))
			}
		}
	default:
		return nil, fmt.Errorf("one of name or selector must be provided")
	}
	if len(params) == 0 && ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == admissionv1.DenyAction {
		return nil, fmt.Errorf("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return params, nil
}

// lazyTypes is a type converter that asks f for the real one at its first
// use (nil if f is): building the built-in kinds' schemas costs a starting
// server tens of milliseconds that only mutating policies need.
func lazyTypes(f func() managedfields.TypeConverter) managedfields.TypeConverter {
	if f == nil {
		return nil
	}
	return lazyTypeConverter{sync.OnceValue(f)}
}

type lazyTypeConverter struct {
	get func() managedfields.TypeConverter
}

func (c lazyTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	return c.get().ObjectToTyped(obj, opts...)
}

func (c lazyTypeConverter) TypedToObject(value *typed.TypedValue) (runtime.Object, error) {
	return c.get().TypedToObject(value)
}
