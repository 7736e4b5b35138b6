package podsecurity

import (
	"context"
	"errors"
	"fmt"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	psadmission "k8s.io/pod-security-admission/admission"
	psconfig "k8s.io/pod-security-admission/admission/api"
	psapi "k8s.io/pod-security-admission/api"
	psmetrics "k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "PodSecurity"

// Exemptions are the requests the policies do not apply to, as the
// exemptions of upstream's PodSecurityConfiguration.
type Exemptions struct {
	Usernames      []string
	Namespaces     []string
	RuntimeClasses []string
}

// Plugin is the PodSecurity admission plugin.
type Plugin struct {
	mu       sync.Mutex
	delegate *psadmission.Admission
	synced   func() bool
	extract  psadmission.DefaultPodSpecExtractor
}

// New is the plugin; call Start before the server serves.
func New() *Plugin { return &Plugin{} }

// Start configures the library with exemptions and the default policy
// (privileged at every mode, as upstream's), reading namespaces from f's
// informer (register before f starts) and, when it lacks one, through
// client, which also lists pods.
func (p *Plugin) Start(f informers.SharedInformerFactory, client kubernetes.Interface, ex Exemptions) error {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return err
	}
	latest := psapi.VersionLatest
	privileged := string(psapi.LevelPrivileged)
	nsInf := f.Core().V1().Namespaces()
	d := &psadmission.Admission{
		Configuration: &psconfig.PodSecurityConfiguration{
			Defaults: psconfig.PodSecurityDefaults{Enforce: privileged, EnforceVersion: latest,
				Audit: privileged, AuditVersion: latest, Warn: privileged, WarnVersion: latest},
			Exemptions: psconfig.PodSecurityExemptions{Usernames: ex.Usernames, Namespaces: ex.Namespaces, RuntimeClasses: ex.RuntimeClasses},
		},
		Evaluator:       evaluator,
		Metrics:         noMetrics{},
		NamespaceGetter: psadmission.NamespaceGetterFromListerAndClient(nsInf.Lister(), client),
		PodLister:       psadmission.PodListerFromClient(client),
	}
	if err := d.CompleteConfiguration(); err != nil {
		return fmt.Errorf("%s configuration error: %w", Name, err)
	}
	if err := d.ValidateConfiguration(); err != nil {
		return fmt.Errorf("%s invalid: %w", Name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delegate, p.synced = d, nsInf.Informer().HasSynced
	return nil
}

// HasSynced reports whether the plugin has read the namespaces.
func (p *Plugin) HasSynced() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.synced != nil && p.synced()
}

// Plugin is the plugin's place in the chain: creates and updates of
// namespaces, pods (and their subresources) and the workload resources
// with a pod template.
func (p *Plugin) Plugin() admission.Plugin {
	resources := append([]schema.GroupResource{{Resource: "namespaces"}}, p.extract.PodSpecResources()...)
	return admission.Plugin{Name: Name, Resources: resources,
		Operations:   []admission.Operation{admission.Create, admission.Update},
		Subresources: []string{"*"}, Validate: p.Validate}
}

// Validate evaluates the request with the library and carries out its
// answer: warnings, audit annotations, a refusal.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	p.mu.Lock()
	d := p.delegate
	p.mu.Unlock()
	if d == nil {
		return apierrors.NewServiceUnavailable("the PodSecurity admission plugin is not started yet")
	}
	attrs := &psapi.AttributesRecord{Name: a.Name, Namespace: a.Namespace, Kind: a.Kind, Resource: a.Resource,
		Subresource: a.Subresource, Operation: admissionv1.Operation(a.Operation), Object: a.Object, OldObject: a.OldObject}
	if a.User != nil {
		attrs.Username = a.User.Name
	}
	res := d.Validate(ctx, attrs)
	for _, w := range res.Warnings {
		a.AddWarning(w)
	}
	for k, v := range res.AuditAnnotations {
		a.AddAnnotation(psapi.AuditAnnotationPrefix+k, v)
	}
	if res.Allowed {
		return nil
	}
	err := admission.Forbidden(a, errors.New("Not allowed by PodSecurity")).(*apierrors.StatusError)
	if r := res.Result; r != nil {
		if r.Message != "" {
			err.ErrStatus.Message = r.Message
		}
		if r.Reason != "" {
			err.ErrStatus.Reason = r.Reason
		}
		if r.Details != nil {
			err.ErrStatus.Details = r.Details
		}
		if r.Code != 0 {
			err.ErrStatus.Code = r.Code
		}
	}
	return err
}

// noMetrics: the library's evaluations are not exported as metrics.
type noMetrics struct{}

func (noMetrics) RecordEvaluation(psmetrics.Decision, psapi.LevelVersion, psmetrics.Mode, psapi.Attributes) {
}
func (noMetrics) RecordExemption(psapi.Attributes)   {}
func (noMetrics) RecordError(bool, psapi.Attributes) {}
