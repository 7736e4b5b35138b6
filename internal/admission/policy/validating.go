package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	upstream "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/policy/matching"
	"plainkube.dev/plainkube/internal/auth"
)

// Name is the plugin's name in upstream's admission order.
const Name = "ValidatingAdmissionPolicy"

// Validating is the ValidatingAdmissionPolicy plugin. It judges requests
// once its Source is set and has read the policies.
type Validating struct {
	source atomic.Pointer[Source]
	authz  auth.Authorizer
	// readyWait bounds how long a request waits for the first read of the
	// policies before it is refused.
	readyWait time.Duration
	// BuiltinTypes, if set, gives the schemas of the built-in kinds that
	// mutating policies' ApplyConfiguration patches need (the API server's
	// own), so that those are not fetched from its OpenAPI; set before
	// Start.
	BuiltinTypes func() managedfields.TypeConverter
}

// NewValidating returns the plugin; authz answers the `authorizer`
// variable of its expressions (nil: expressions using it fail).
func NewValidating(authz auth.Authorizer) *Validating {
	return &Validating{authz: authz, readyWait: 10 * time.Second}
}

// SetSource gives the plugin what it reads.
func (v *Validating) SetSource(s *Source) { v.source.Store(s) }

// Start reads the policies from f's informers (register before f starts)
// and the rest through cs and cfg (the API server's loopback client) until
// ctx ends, and type-checks them; synced reports whether the informers
// have synced.
func (v *Validating) Start(ctx context.Context, cfg *rest.Config, f informers.SharedInformerFactory, cs kubernetes.Interface, log *slog.Logger) (synced func() bool, err error) {
	s, err := NewSource(ctx, cfg, f, cs, log, v.BuiltinTypes)
	if err != nil {
		return nil, err
	}
	v.SetSource(s)
	return s.HasSynced, nil
}

// Plugin is the plugin's place in the admission chain: every operation on
// every resource and subresource.
func (v *Validating) Plugin() admission.Plugin {
	return admission.Plugin{Name: Name, Subresources: []string{"*"}, Validate: v.Validate}
}

// Validate judges one request by every policy that matches it.
func (v *Validating) Validate(ctx context.Context, a *admission.Attributes) error {
	if matching.IsExempt(a.Kind) {
		return nil
	}
	src, err := v.ready(ctx)
	if err != nil {
		return admission.Forbidden(a, err)
	}
	policies := src.Policies()
	if len(policies) == 0 {
		return nil
	}
	req := matchRequest(a)
	ev := &evaluation{ctx: ctx, a: a, src: src, authz: v.authz, req: req}
	for _, p := range policies {
		ev.policy(p)
	}
	return ev.finish()
}

func (v *Validating) ready(ctx context.Context) (*Source, error) {
	deadline := time.Now().Add(v.readyWait)
	for {
		if s := v.source.Load(); s != nil && s.HasSynced() {
			return s, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, errors.New("not yet ready to handle request")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func matchRequest(a *admission.Attributes) *matching.Request {
	return &matching.Request{
		Operation: admissionv1.OperationType(a.Operation), Resource: a.Resource, Subresource: a.Subresource,
		Kind: a.Kind, Namespace: a.Namespace, Name: a.Name,
		ObjectLabels: labelsOf(a.Object), OldObjectLabels: labelsOf(a.OldObject),
	}
}

// labelsOf is an object's labels, non-nil for any object with metadata;
// nil for no object (or one without metadata, as connect options).
func labelsOf(obj runtime.Object) map[string]string {
	if obj == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	if l := m.GetLabels(); l != nil {
		return l
	}
	return map[string]string{}
}

// decision is a refusal with the policy and binding it came from.
type decision struct {
	policy, binding string
	message         string
	reason          metav1.StatusReason
}

// evaluation is one request's pass over the policies.
type evaluation struct {
	ctx   context.Context
	a     *admission.Attributes
	src   *Source
	authz auth.Authorizer
	req   *matching.Request

	upstream  *upstream.VersionedAttributes
	namespace *corev1.Namespace
	nsRead    bool
	denied    []decision
	failures  []validating.ValidationFailureValue
}

func (e *evaluation) namespaceLabels() (map[string]string, error) {
	ns, err := e.namespaceObject()
	if err != nil || ns == nil {
		return nil, err
	}
	return ns.Labels, nil
}

func (e *evaluation) namespaceObject() (*corev1.Namespace, error) {
	if e.nsRead {
		return e.namespace, nil
	}
	name := e.a.Namespace
	// A namespace's own requests carry its name as namespace; it has no
	// namespace object of its own.
	if e.a.Kind.Group == "" && e.a.Kind.Kind == "Namespace" {
		name = ""
	}
	if name != "" {
		ns, err := e.src.Namespace(e.ctx, name)
		if err != nil {
			return nil, err
		}
		e.namespace = ns
	}
	e.nsRead = true
	return e.namespace, nil
}

// configError acts on a policy or binding that cannot be applied as the
// policy's failurePolicy says.
func (e *evaluation) configError(p *admissionv1.ValidatingAdmissionPolicy, binding string, err error) {
	fp := admissionv1.Fail
	if p.Spec.FailurePolicy != nil {
		fp = *p.Spec.FailurePolicy
	}
	var msg string
	switch {
	case fp == admissionv1.Ignore:
		return
	case fp != admissionv1.Fail:
		msg = fmt.Sprintf("unrecognized failure policy: '%v'", fp)
	case binding == "":
		msg = fmt.Errorf("failed to configure policy: %w", err).Error()
	default:
		msg = fmt.Errorf("failed to configure binding: %w", err).Error()
	}
	e.denied = append(e.denied, decision{policy: p.Name, binding: binding, message: msg})
}

func (e *evaluation) policy(p *admissionv1.ValidatingAdmissionPolicy) {
	m, err := matching.Matches(p.Spec.MatchConstraints, e.req, e.namespaceLabels, nil)
	if err != nil {
		e.configError(p, "", err)
		return
	}
	if !m.Matches {
		return
	}
	validator := e.src.Validator(p)
	if err := validator.CompileError(); err != nil {
		e.configError(p, "", err)
		return
	}
	annotations := map[string][]string{}
	for _, b := range e.src.Bindings(p.Name) {
		bm, err := matching.Matches(b.Spec.MatchResources, e.req, e.namespaceLabels, nil)
		if err != nil {
			e.configError(p, b.Name, err)
			continue
		}
		if !bm.Matches {
			continue
		}
		params, err := e.src.Params(e.ctx, p.Spec.ParamKind, b.Spec.ParamRef, e.a.Namespace)
		if err != nil {
			e.configError(p, b.Name, err)
			continue
		}
		ns, err := e.namespaceObject()
		if err != nil {
			e.configError(p, b.Name, err)
			continue
		}
		for _, param := range params {
			res := validator.Validate(e.ctx, m.Resource, e.versioned(), param, ns, celconfig.RuntimeCELCostBudget, e.authorizer())
			e.result(p, b, res, annotations)
		}
	}
	for key, values := range annotations {
		e.a.AddAnnotation(p.Name+"/"+key, strings.Join(values, ", "))
	}
}

// maxAuditAnnotationValueLength cuts long audit annotation values, as
// upstream.
const maxAuditAnnotationValueLength = 10 * 1024

func (e *evaluation) result(p *admissionv1.ValidatingAdmissionPolicy, b *admissionv1.ValidatingAdmissionPolicyBinding, res validating.ValidateResult, annotations map[string][]string) {
	for i, d := range res.Decisions {
		if d.Action != validating.ActionDeny {
			continue
		}
		for _, action := range b.Spec.ValidationActions {
			switch action {
			case admissionv1.Deny:
				e.denied = append(e.denied, decision{policy: p.Name, binding: b.Name, message: d.Message, reason: d.Reason})
			case admissionv1.Warn:
				e.a.AddWarning(fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", p.Name, b.Name, d.Message))
			case admissionv1.Audit:
				e.failures = append(e.failures, validating.ValidationFailureValue{
					ExpressionIndex: i, Message: d.Message, ValidationActions: b.Spec.ValidationActions,
					Binding: b.Name, Policy: b.Spec.PolicyName,
				})
			}
		}
	}
	for _, ann := range res.AuditAnnotations {
		switch ann.Action {
		case validating.AuditAnnotationActionPublish:
			value := ann.Value
			if len(value) > maxAuditAnnotationValueLength {
				value = value[:maxAuditAnnotationValueLength]
			}
			seen := false
			for _, v := range annotations[ann.Key] {
				seen = seen || v == value
			}
			if !seen {
				annotations[ann.Key] = append(annotations[ann.Key], value)
			}
		case validating.AuditAnnotationActionError:
			e.denied = append(e.denied, decision{policy: p.Name, binding: b.Name, message: ann.Error})
		}
	}
}

// maxValidationFailures bounds the validation_failure audit annotation.
const maxValidationFailures = 50

// finish publishes the audit failures and refuses the request with the
// first denial, in upstream's words.
func (e *evaluation) finish() error {
	if n := len(e.failures); n > 0 {
		if n > maxValidationFailures {
			e.failures = e.failures[:maxValidationFailures]
		}
		if v, err := json.Marshal(e.failures); err == nil {
			e.a.AddAnnotation("validation.policy.admission.k8s.io/validation_failure", string(v))
		}
	}
	if len(e.denied) == 0 {
		return nil
	}
	d := e.denied[0]
	msg := fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", d.policy, d.message)
	if d.binding != "" {
		msg = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", d.policy, d.binding, d.message)
	}
	err := admission.Forbidden(e.a, errors.New(msg)).(*apierrors.StatusError)
	reason := d.reason
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	err.ErrStatus.Reason = reason
	err.ErrStatus.Code = reasonCode(reason)
	if err.ErrStatus.Details == nil {
		err.ErrStatus.Details = &metav1.StatusDetails{}
	}
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	return err
}

func reasonCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonInvalid:
		return http.StatusUnprocessableEntity
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

// versioned is the request as upstream's CEL activation reads it (made
// once per request): object, oldObject and request.
func (e *evaluation) versioned() *upstream.VersionedAttributes {
	if e.upstream != nil {
		return e.upstream
	}
	a := e.a
	var u user.Info = &user.DefaultInfo{}
	if a.User != nil {
		u = &user.DefaultInfo{Name: a.User.Name, UID: a.User.UID, Groups: a.User.Groups, Extra: a.User.Extra}
	}
	var obj runtime.Object
	if a.Operation != admission.Delete {
		obj = withKind(a.Object, a.Kind)
	}
	old := withKind(a.OldObject, a.Kind)
	rec := upstream.NewAttributesRecord(obj, old, a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource,
		upstream.Operation(a.Operation), a.Options, a.DryRun, u)
	e.upstream = &upstream.VersionedAttributes{Attributes: rec, VersionedKind: a.Kind, VersionedObject: upstream.NewLazyObject(obj), VersionedOldObject: upstream.NewLazyObject(old)}
	return e.upstream
}

// withKind is obj with apiVersion and kind set (typed objects decoded by
// the API server carry none, and expressions may read them); obj itself
// when it has them or cannot be converted.
func withKind(obj runtime.Object, kind schema.GroupVersionKind) runtime.Object {
	if obj == nil || !obj.GetObjectKind().GroupVersionKind().Empty() {
		return obj
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return obj
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(kind)
	return u
}
