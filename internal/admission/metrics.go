package admission

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are upstream's admission metrics (apiserver_admission_*), by
// name and labels: how long the chain's two steps and each plugin take,
// and what each webhook call did. A nil *Metrics records nothing.
type Metrics struct {
	step, controller, webhook *prometheus.HistogramVec
	webhookRequests           *prometheus.CounterVec
	webhookRejections         *prometheus.CounterVec
	webhookFailOpen           *prometheus.CounterVec
}

// The step types of the metrics' type label, as upstream's: the chain's
// and plugins' "admit" and "validate"; webhooks say "admit" and
// "validating".
const (
	StepAdmit           = "admit"
	StepValidate        = "validate"
	StepWebhookValidate = "validating"
)

// The error_type label of apiserver_admission_webhook_rejection_count.
const (
	WebhookCallingError  = "calling_webhook_error"
	WebhookInternalError = "apiserver_internal_error"
	WebhookNoError       = "no_error"
)

// NewMetrics makes the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	buckets := []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5}
	m := &Metrics{
		step: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "apiserver", Subsystem: "admission", Name: "step_admission_duration_seconds",
			Help:    "Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).",
			Buckets: buckets}, []string{"type", "operation", "rejected"}),
		controller: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "apiserver", Subsystem: "admission", Name: "controller_admission_duration_seconds",
			Help:    "Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
			Buckets: buckets}, []string{"name", "type", "operation", "rejected"}),
		webhook: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "apiserver", Subsystem: "admission", Name: "webhook_admission_duration_seconds",
			Help:    "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25}}, []string{"name", "type", "operation", "rejected"}),
		webhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "apiserver", Subsystem: "admission", Name: "webhook_request_total",
			Help: "Admission webhook request total, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded."},
			[]string{"name", "type", "operation", "code", "rejected"}),
		webhookRejections: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "apiserver", Subsystem: "admission", Name: "webhook_rejection_count",
			Help: "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded."},
			[]string{"name", "type", "operation", "error_type", "rejection_code"}),
		webhookFailOpen: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "apiserver", Subsystem: "admission", Name: "webhook_fail_open_count",
			Help: "Admission webhook fail open count, identified by name and broken out for each admission type (validating or admit)."},
			[]string{"name", "type"}),
	}
	reg.MustRegister(m.step, m.controller, m.webhook, m.webhookRequests, m.webhookRejections, m.webhookFailOpen)
	return m
}

// ObserveStep records one run of the chain's mutating (StepAdmit) or
// validating (StepValidate) phase.
func (m *Metrics) ObserveStep(step string, op Operation, rejected bool, d time.Duration) {
	if m == nil {
		return
	}
	m.step.WithLabelValues(step, string(op), strconv.FormatBool(rejected)).Observe(d.Seconds())
}

// ObserveWebhook records one call of a webhook: the HTTP code it answered
// (0: the server failed before an answer; capped at 600), whether it
// refused the request, how long it took.
func (m *Metrics) ObserveWebhook(name, step string, op Operation, code int, rejected bool, d time.Duration) {
	if m == nil {
		return
	}
	code = min(code, 600)
	m.webhookRequests.WithLabelValues(name, step, string(op), strconv.Itoa(code), strconv.FormatBool(rejected)).Inc()
	m.webhook.WithLabelValues(name, step, string(op), strconv.FormatBool(rejected)).Observe(d.Seconds())
}

// ObserveWebhookRejection records a webhook's refusal (errorType
// WebhookNoError, its code) or a failure that refused the request.
func (m *Metrics) ObserveWebhookRejection(name, step string, op Operation, errorType string, code int) {
	if m == nil {
		return
	}
	m.webhookRejections.WithLabelValues(name, step, string(op), errorType, strconv.Itoa(min(code, 600))).Inc()
}

// ObserveWebhookFailOpen records a failed call of a webhook whose
// failurePolicy Ignore let the request through.
func (m *Metrics) ObserveWebhookFailOpen(name, step string) {
	if m == nil {
		return
	}
	m.webhookFailOpen.WithLabelValues(name, step).Inc()
}

// operations indexes the observers Instrument prepares.
var operations = [...]Operation{Create, Update, Delete, Connect}

// Instrument returns c with each plugin's Mutate and Validate timed into
// apiserver_admission_controller_admission_duration_seconds under the
// plugin's name (nothing if m is nil).
func (c Chain) Instrument(m *Metrics) Chain {
	if m == nil {
		return c
	}
	out := make(Chain, len(c))
	for i, p := range c {
		if p.Mutate != nil {
			p.Mutate = m.timed(p.Name, StepAdmit, p.Mutate)
		}
		if p.Validate != nil {
			p.Validate = m.timed(p.Name, StepValidate, p.Validate)
		}
		out[i] = p
	}
	return out
}

// timed wraps a plugin's phase; each of its observers is looked up once,
// when first needed (a series made for every plugin, operation and outcome
// up front would be thousands of zeros in every scrape).
func (m *Metrics) timed(name, step string, f func(context.Context, *Attributes) error) func(context.Context, *Attributes) error {
	var observers [len(operations)][2]func() prometheus.Observer
	for i, op := range operations {
		for j, rejected := range []bool{false, true} {
			observers[i][j] = sync.OnceValue(func() prometheus.Observer {
				return m.controller.WithLabelValues(name, step, string(op), strconv.FormatBool(rejected))
			})
		}
	}
	return func(ctx context.Context, a *Attributes) error {
		start := time.Now()
		err := f(ctx, a)
		for i, op := range operations {
			if op == a.Operation {
				rejected := 0
				if err != nil {
					rejected = 1
				}
				observers[i][rejected]().Observe(time.Since(start).Seconds())
				break
			}
		}
		return err
	}
}
