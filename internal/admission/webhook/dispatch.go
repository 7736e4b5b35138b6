package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
	client "plainkube.dev/plainkube/internal/webhook"
)

// Plugin names, as upstream's.
const (
	MutatingName   = "MutatingAdmissionWebhook"
	ValidatingName = "ValidatingAdmissionWebhook"
)

// readyWait is how long a request waits for the configurations' first
// list before it is refused (upstream's admission handler waits 10 s).
var readyWait = 10 * time.Second

// hookSource is where the plugins find webhooks (Source).
type hookSource interface {
	HasSynced() bool
	Mutating() []*hook
	Validating() []*hook
	NamespaceLabels(ctx context.Context, name string) (map[string]string, error)
}

// Options configure the plugins.
type Options struct {
	// Authorizer answers matchConditions' authorizer variable (nil: it
	// errors).
	Authorizer auth.Authorizer
	Logger     *slog.Logger
	// Metrics records each call (apiserver_admission_webhook_*; nil:
	// nothing is recorded).
	Metrics *admission.Metrics
}

// Webhooks are the two webhook plugins. They refuse requests (as not yet
// ready) until Start gives them their configurations.
type Webhooks struct {
	wiring  atomic.Pointer[wiring]
	authz   conditionAuthorizer
	log     *slog.Logger
	metrics *admission.Metrics
}

// wiring is what the plugins read webhooks from and call them with.
type wiring struct {
	src      hookSource
	clients  *client.Clients
	versions Versions
}

// New makes the webhook plugins; Start them once the API serves.
func New(opts Options) *Webhooks {
	w := &Webhooks{log: opts.Logger, metrics: opts.Metrics}
	if opts.Authorizer != nil {
		w.authz = Authorizer(opts.Authorizer)
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	return w
}

// Start gives the plugins their webhooks (src), the client calling them
// and, for matchPolicy Equivalent, the server's versions (nil: a rule
// matches only the request's own resource).
func (w *Webhooks) Start(src *Source, clients *client.Clients, versions Versions) {
	w.start(src, clients, versions)
}

func (w *Webhooks) start(src hookSource, clients *client.Clients, versions Versions) {
	if clients == nil {
		clients = client.NewClients(nil)
	}
	w.wiring.Store(&wiring{src: src, clients: clients, versions: versions})
}

// synced is the wiring once its webhooks are listed, or nil.
func (w *Webhooks) synced() *wiring {
	if c := w.wiring.Load(); c != nil && c.src.HasSynced() {
		return c
	}
	return nil
}

// Mutating is the MutatingAdmissionWebhook plugin.
func (w *Webhooks) Mutating() admission.Plugin {
	return admission.Plugin{Name: MutatingName, Subresources: []string{"*"}, Mutate: w.mutate}
}

// Validating is the ValidatingAdmissionWebhook plugin.
func (w *Webhooks) Validating() admission.Plugin {
	return admission.Plugin{Name: ValidatingName, Subresources: []string{"*"}, Validate: w.validate}
}

// ready waits (a bounded while) for the configurations' first list.
func (w *Webhooks) ready(ctx context.Context, a *admission.Attributes) (*wiring, error) {
	if c := w.synced(); c != nil {
		return c, nil
	}
	deadline := time.NewTimer(readyWait)
	defer deadline.Stop()
	// Looked at again after 1 ms, doubling to 100 ms: the first list
	// usually lands within milliseconds of a starting server's first
	// writes.
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		select {
		case <-ctx.Done():
			return nil, admission.Forbiddenf(a, "not yet ready to handle request")
		case <-deadline.C:
			return nil, admission.Forbiddenf(a, "not yet ready to handle request")
		case <-time.After(wait):
		}
		if c := w.synced(); c != nil {
			return c, nil
		}
	}
}

// callError is a failure to call a webhook (upstream's
// ErrCallingWebhook), which its failurePolicy decides on.
type callError struct {
	name   string
	reason error
	// code is the HTTP status the failure counts as in the metrics when
	// the webhook did not answer one (0: 503, upstream's for a call that
	// failed or an answer that made no sense).
	code int
}

// statusCode is the HTTP status of the failure: the webhook's answer, or
// what upstream counts it as.
func (e *callError) statusCode() int {
	var st *apierrors.StatusError
	switch {
	case errors.As(e.reason, &st):
		return int(st.ErrStatus.Code)
	case e.code != 0:
		return e.code
	}
	return http.StatusServiceUnavailable
}

func (e *callError) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.name, e.reason)
}

func (e *callError) Unwrap() error { return e.reason }

// denied is upstream's error of a webhook refusing a request: its status
// (a code of at least 400), the message prefixed with the webhook's name.
func denied(name string, result *metav1.Status) *apierrors.StatusError {
	st := metav1.Status{Status: metav1.StatusFailure}
	if result != nil {
		st = *result
	}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == metav1.StatusSuccess {
		st.Status = metav1.StatusFailure
	}
	prefix := fmt.Sprintf("admission webhook %q denied the request", name)
	switch {
	case st.Message != "":
		st.Message = prefix + ": " + st.Message
	case st.Reason != "":
		st.Message = prefix + ": " + string(st.Reason)
	default:
		st.Message = prefix + " without explanation"
	}
	st.Kind, st.APIVersion = "", ""
	return &apierrors.StatusError{ErrStatus: st}
}

// call sends the review of a request to inv's webhook, with obj and old
// at the kind it matched, and returns its answer once allowed. Warnings
// and audit annotations are recorded on a either way.
func (w *Webhooks) call(ctx context.Context, c *wiring, a *admission.Attributes, inv *invocation, obj, old runtime.Object) (*response, error) {
	h := inv.hook
	if a.DryRun {
		if h.sideEffects == nil {
			return nil, &callError{name: h.name, reason: errors.New("Webhook SideEffects is nil"), code: http.StatusBadRequest}
		}
		if se := *h.sideEffects; se != admissionregistrationv1.SideEffectClassNone && se != admissionregistrationv1.SideEffectClassNoneOnDryRun {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", h.name))
		}
	}
	rv, err := newReview(a, inv, obj, old)
	if err != nil {
		return nil, &callError{name: h.name, reason: fmt.Errorf("could not create admission objects: %w", err), code: http.StatusBadRequest}
	}
	timeout := time.Duration(h.timeoutSeconds) * time.Second
	if timeout <= 0 || timeout > 30*time.Second {
		timeout = 30 * time.Second
	}
	data, err := c.clients.Post(ctx, clientConfig(h.clientConfig), timeout, rv.body)
	if err != nil {
		return nil, &callError{name: h.name, reason: fmt.Errorf("failed to call webhook: %w", err)}
	}
	resp, err := verifyResponse(rv, data, h.mutating)
	if err != nil {
		var de decodeError
		if errors.As(err, &de) {
			return nil, &callError{name: h.name, reason: fmt.Errorf("failed to call webhook: %w", err)}
		}
		return nil, &callError{name: h.name, reason: fmt.Errorf("received invalid webhook response: %w", err)}
	}
	for k, v := range resp.auditAnnotations {
		a.AddAnnotation(h.name+"/"+k, v)
	}
	for _, msg := range resp.warnings {
		a.AddWarning(msg)
	}
	if !resp.allowed {
		inv.denied = true
		return nil, denied(h.name, resp.result)
	}
	return resp, nil
}

// failedOpen handles a call failure of a webhook whose failurePolicy is
// Ignore: logged, counted and recorded as upstream's failed-open audit
// annotation.
func (w *Webhooks) failedOpen(a *admission.Attributes, h *hook, annotationKey string, err error) {
	if errors.Is(err, context.Canceled) {
		// As upstream: the request went away, not the webhook.
		return
	}
	w.log.Warn("failed calling webhook, failing open", "webhook", h.name, "err", err)
	w.metrics.ObserveWebhookFailOpen(h.name, metricsStep(h))
	a.AddAnnotation(annotationKey, h.name)
}

// metricsStep is the type label of a webhook's metrics, as upstream's.
func metricsStep(h *hook) string {
	if h.mutating {
		return admission.StepAdmit
	}
	return admission.StepWebhookValidate
}

// observe records one call of inv's webhook that began at start and
// ended with err, as upstream's dispatchers do: a failure refuses the
// request unless the failurePolicy is Ignore; a refusal by the webhook
// counts with its code; any other error as the server's own, code 0.
func (w *Webhooks) observe(a *admission.Attributes, inv *invocation, start time.Time, err error) {
	if w.metrics == nil {
		return
	}
	h, step, took := inv.hook, metricsStep(inv.hook), time.Since(start)
	var ce *callError
	var st apierrors.APIStatus
	switch {
	case err == nil:
		w.metrics.ObserveWebhook(h.name, step, a.Operation, http.StatusOK, false, took)
	case errors.As(err, &ce):
		code, rejected := ce.statusCode(), !h.ignoresFailures()
		if rejected && !errors.Is(err, context.Canceled) {
			w.metrics.ObserveWebhookRejection(h.name, step, a.Operation, admission.WebhookCallingError, code)
		}
		w.metrics.ObserveWebhook(h.name, step, a.Operation, code, rejected, took)
	case inv.denied && errors.As(err, &st):
		code := int(st.Status().Code)
		w.metrics.ObserveWebhookRejection(h.name, step, a.Operation, admission.WebhookNoError, code)
		w.metrics.ObserveWebhook(h.name, step, a.Operation, code, true, took)
	default:
		w.metrics.ObserveWebhookRejection(h.name, step, a.Operation, admission.WebhookInternalError, 0)
		w.metrics.ObserveWebhook(h.name, step, a.Operation, 0, true, took)
	}
}

// clientConfig is the shared client's view of a webhook's clientConfig.
func clientConfig(cc admissionregistrationv1.WebhookClientConfig) client.ClientConfig {
	out := client.ClientConfig{CABundle: cc.CABundle}
	if cc.URL != nil {
		out.URL = *cc.URL
	}
	if s := cc.Service; s != nil {
		out.Service = &client.Service{Namespace: s.Namespace, Name: s.Name}
		if s.Path != nil {
			out.Service.Path = *s.Path
		}
		if s.Port != nil {
			out.Service.Port = *s.Port
		}
	}
	return out
}
