package apiserver

import (
	"context"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
)

// A write runs the admission chain (Config.Admission) at two points: its
// mutating phase after the object is defaulted, its validating phase after
// the resource's own validation, before storage. Every write of an object
// does (create, update, patch, apply, subresource writes, delete — once
// per object of a deletecollection), and so do the creates and connects
// that subresource handlers serve themselves (registry.API's AdmitCreate
// and AdmitConnect). Dry runs are admitted too; only the storage hooks
// (BeforeCreate…) are skipped on them.

// admissionAttributes describes a write to rs for admission: at the
// version the request used, by the request's user.
func admissionAttributes(ctx context.Context, rs *resourceStore, op admission.Operation, sub, ns, name string, obj, old, opts runtime.Object, dryRun bool) *admission.Attributes {
	return &admission.Attributes{Operation: op, Kind: rs.res.Kind, Resource: rs.gvr, Subresource: sub,
		Namespace: ns, Name: name, Object: obj, OldObject: old, Options: opts, DryRun: dryRun, User: auth.UserFrom(ctx)}
}

// mutate runs the chain's mutating phase; on a refusal the warnings
// recorded so far go back to the client.
func (s *Server) mutate(ctx context.Context, a *admission.Attributes) error {
	start := time.Now()
	err := s.cfg.Admission.Mutate(ctx, a)
	s.cfg.AdmissionMetrics.ObserveStep(admission.StepAdmit, a.Operation, err != nil, time.Since(start))
	if err != nil {
		sendWarnings(ctx, a)
	}
	return err
}

// validate runs the chain's validating phase and sends the warnings the
// request's plugins recorded (both phases) back to the client.
func (s *Server) validate(ctx context.Context, a *admission.Attributes) error {
	start := time.Now()
	err := s.cfg.Admission.Validate(ctx, a)
	s.cfg.AdmissionMetrics.ObserveStep(admission.StepValidate, a.Operation, err != nil, time.Since(start))
	sendWarnings(ctx, a)
	return err
}

// admit runs both phases on a write nothing but admission changes.
func (s *Server) admit(ctx context.Context, a *admission.Attributes) error {
	if err := s.mutate(ctx, a); err != nil {
		return err
	}
	return s.validate(ctx, a)
}

// createOptions and updateOptions are the options admission sees.
func createOptions(opts writeOptions) *metav1.CreateOptions {
	return &metav1.CreateOptions{DryRun: dryRunValue(opts.dryRun), FieldManager: opts.manager}
}

func updateOptions(opts writeOptions) *metav1.UpdateOptions {
	return &metav1.UpdateOptions{DryRun: dryRunValue(opts.dryRun), FieldManager: opts.manager}
}

func dryRunValue(dryRun bool) []string {
	if dryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// warningSink collects the admission warnings of one request into its
// response headers, each once (an update retried on a conflict admits its
// object again).
type warningSink struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	sent map[string]bool
}

type warningSinkKey struct{}

// withWarningSink lets admission warnings reach w's headers.
func withWarningSink(r *http.Request, w http.ResponseWriter) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), warningSinkKey{}, &warningSink{w: w}))
}

func sendWarnings(ctx context.Context, a *admission.Attributes) {
	warn(ctx, a.Warnings())
}

// warn sends warnings to the request's client (once each).
func warn(ctx context.Context, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	sink, ok := ctx.Value(warningSinkKey{}).(*warningSink)
	if !ok {
		return
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.sent == nil {
		sink.sent = map[string]bool{}
	}
	for _, msg := range warnings {
		if !sink.sent[msg] {
			sink.sent[msg] = true
			addWarnings(sink.w, []string{msg})
		}
	}
}

// kindOf is obj's kind in the server's scheme.
func (s *Server) kindOf(obj runtime.Object) schema.GroupVersionKind {
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		return gvk
	}
	if gvks, _, err := s.codecs.scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		return gvks[0]
	}
	return schema.GroupVersionKind{}
}
