package webhook

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"

	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"

	"plainkube.dev/plainkube/internal/admission"
)

// hook is one webhook of a configuration, with what matching needs
// prepared once.
type hook struct {
	// uid identifies the webhook across reinvocations:
	// <configuration>/<webhook>/<index>.
	uid           string
	configuration string
	mutating      bool

	name                    string
	clientConfig            admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           admissionregistrationv1.FailurePolicyType
	matchPolicy             admissionregistrationv1.MatchPolicyType
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          int32
	admissionReviewVersions []string
	matchConditions         []admissionregistrationv1.MatchCondition
	reinvocationPolicy      admissionregistrationv1.ReinvocationPolicyType

	namespaceSelector, objectSelector       labels.Selector
	namespaceSelectorErr, objectSelectorErr error

	compileOnce sync.Once
	conditions  matchconditions.Matcher
}

func (h *hook) ignoresFailures() bool { return h.failurePolicy == admissionregistrationv1.Ignore }

func newHook(configuration string, index int, mutating bool, name string, cc admissionregistrationv1.WebhookClientConfig,
	rules []admissionregistrationv1.RuleWithOperations, fp *admissionregistrationv1.FailurePolicyType, mp *admissionregistrationv1.MatchPolicyType,
	nsSel, objSel *metav1.LabelSelector, se *admissionregistrationv1.SideEffectClass, timeout *int32, versions []string,
	conds []admissionregistrationv1.MatchCondition) *hook {
	h := &hook{
		uid: fmt.Sprintf("%s/%s/%d", configuration, name, index), configuration: configuration, mutating: mutating,
		name: name, clientConfig: cc, rules: rules, sideEffects: se, admissionReviewVersions: versions, matchConditions: conds,
		// Upstream's defaults, for objects stored before the registry
		// defaulted them.
		failurePolicy: admissionregistrationv1.Fail, matchPolicy: admissionregistrationv1.Equivalent, timeoutSeconds: 10,
		reinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
	}
	if fp != nil {
		h.failurePolicy = *fp
	}
	if mp != nil {
		h.matchPolicy = *mp
	}
	if timeout != nil {
		h.timeoutSeconds = *timeout
	}
	h.namespaceSelector, h.namespaceSelectorErr = selector(nsSel)
	h.objectSelector, h.objectSelectorErr = selector(objSel)
	return h
}

func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

func mutatingHooks(c *admissionregistrationv1.MutatingWebhookConfiguration) []*hook {
	out := make([]*hook, 0, len(c.Webhooks))
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		h := newHook(c.Name, i, true, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.NamespaceSelector, w.ObjectSelector,
			w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions)
		if w.ReinvocationPolicy != nil {
			h.reinvocationPolicy = *w.ReinvocationPolicy
		}
		out = append(out, h)
	}
	return out
}

func validatingHooks(c *admissionregistrationv1.ValidatingWebhookConfiguration) []*hook {
	out := make([]*hook, 0, len(c.Webhooks))
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		out = append(out, newHook(c.Name, i, false, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.NamespaceSelector, w.ObjectSelector,
			w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions))
	}
	return out
}

// Source holds the webhooks of the stored configurations, from informers,
// and the namespaces' labels.
type Source struct {
	mutatingLister   admissionlisters.MutatingWebhookConfigurationLister
	validatingLister admissionlisters.ValidatingWebhookConfigurationLister
	namespaces       admission.Namespaces
	synced           admission.Synced

	// The webhooks in calling order (configurations by name), rebuilt on
	// every change of a configuration.
	mutating, validating atomic.Pointer[[]*hook]
	rebuild              sync.Mutex
}

// NewSource reads the webhook configurations and namespaces from f's
// informers (start f after), and a namespace not in the informer yet
// through client.
func NewSource(f informers.SharedInformerFactory, client kubernetes.Interface) (*Source, error) {
	m := f.Admissionregistration().V1().MutatingWebhookConfigurations()
	v := f.Admissionregistration().V1().ValidatingWebhookConfigurations()
	ns := f.Core().V1().Namespaces()
	s := &Source{mutatingLister: m.Lister(), validatingLister: v.Lister(), namespaces: admission.Namespaces{Lister: ns.Lister(), Client: client}}
	s.mutating.Store(&[]*hook{})
	s.validating.Store(&[]*hook{})
	onChange := func(rebuild func()) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { rebuild() },
			UpdateFunc: func(_, _ any) { rebuild() },
			DeleteFunc: func(any) { rebuild() },
		}
	}
	mr, err := m.Informer().AddEventHandler(onChange(s.rebuildMutating))
	if err != nil {
		return nil, err
	}
	vr, err := v.Informer().AddEventHandler(onChange(s.rebuildValidating))
	if err != nil {
		return nil, err
	}
	s.synced = admission.Synced{mr.HasSynced, vr.HasSynced, ns.Informer().HasSynced}
	return s, nil
}

// HasSynced reports whether the informers have their first list and the
// webhooks of it are built.
func (s *Source) HasSynced() bool { return s.synced.HasSynced() }

func (s *Source) rebuildMutating() {
	rebuild(&s.rebuild, &s.mutating, s.mutatingLister.List, mutatingHooks)
}

func (s *Source) rebuildValidating() {
	rebuild(&s.rebuild, &s.validating, s.validatingLister.List, validatingHooks)
}

// rebuild lists the configurations and stores their webhooks in the
// order of the configurations' names.
func rebuild[C metav1.Object](mu *sync.Mutex, into *atomic.Pointer[[]*hook], list func(labels.Selector) ([]C, error), hooksOf func(C) []*hook) {
	mu.Lock()
	defer mu.Unlock()
	cs, err := list(labels.Everything())
	if err != nil {
		return
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].GetName() < cs[j].GetName() })
	var hooks []*hook
	for _, c := range cs {
		hooks = append(hooks, hooksOf(c)...)
	}
	into.Store(&hooks)
}

// Mutating and Validating are the webhooks in calling order.
func (s *Source) Mutating() []*hook   { return *s.mutating.Load() }
func (s *Source) Validating() []*hook { return *s.validating.Load() }

// NamespaceLabels are the labels of namespace name: from the informer, or
// (as upstream, in case the cache lags) from the API.
func (s *Source) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	ns, err := s.namespaces.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return ns.Labels, nil
}
