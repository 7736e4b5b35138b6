package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"plainkube.dev/plainkube/internal/admission"
)

// mutate calls the mutating webhooks that match the request one after
// another, applying each one's patch before the next is asked. A change
// makes the chain's mutating phase run again (admission.Reinvocable), in
// which only the webhooks with reinvocationPolicy IfNeeded that ran before
// a later change are called again.
func (w *Webhooks) mutate(ctx context.Context, a *admission.Attributes) error {
	if exempt(a) {
		return nil
	}
	wr, err := w.ready(ctx, a)
	if err != nil {
		return err
	}
	hooks := wr.src.Mutating()
	if len(hooks) == 0 {
		return nil
	}
	defer func(start time.Time) { admission.AddWebhookTime(ctx, time.Since(start)) }(time.Now())
	state := a.Reinvocable(MutatingName)
	defer state.End()
	m := &mutation{w: w, wiring: wr, r: newRequest(a, wr.src, wr.versions), state: state}
	return m.round(ctx, hooks)
}

// mutation is the state of one request's mutating webhooks.
type mutation struct {
	w      *Webhooks
	wiring *wiring
	r      *request
	state  *admission.Reinvocable
}

func (m *mutation) round(ctx context.Context, hooks []*hook) error {
	a := m.r.a
	round := 0
	if a.Reinvoking() {
		round = 1
	}
	for i, h := range hooks {
		inv, err := m.r.shouldCall(ctx, h, m.w.authz)
		if err != nil {
			return err
		}
		// A webhook not called in the first round is not called in the
		// second, even if it matches now.
		if inv == nil || !m.state.ShouldCall(h.uid) {
			continue
		}
		start := time.Now()
		changed, err := m.call(ctx, inv)
		m.w.observe(a, inv, start, err)
		a.AddAnnotation(fmt.Sprintf("mutation.webhook.admission.k8s.io/round_%d_index_%d", round, i), mutationAnnotation(h, changed))
		m.state.Called(h.uid, changed, h.reinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy)
		if err == nil {
			continue
		}
		var ce *callError
		if !errors.As(err, &ce) {
			return err
		}
		if !h.ignoresFailures() {
			return apierrors.NewInternalError(err)
		}
		m.w.failedOpen(a, h, fmt.Sprintf("failed-open.mutation.webhook.admission.k8s.io/round_%d_index_%d", round, i), err)
		if ctx.Err() != nil {
			return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
		}
	}
	return nil
}

// call asks one webhook and applies its patch to the request's object;
// changed reports whether the object changed.
func (m *mutation) call(ctx context.Context, inv *invocation) (changed bool, err error) {
	h, a := inv.hook, m.r.a
	obj, old, err := m.r.objects(ctx, inv.kind)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	resp, err := m.w.call(ctx, m.wiring, a, inv, obj, old)
	if err != nil || len(resp.patch) == 0 {
		return false, err
	}
	patch, err := jsonpatch.DecodePatch(resp.patch)
	if err != nil {
		return false, &callError{name: h.name, reason: fmt.Errorf("received undecodable patch in webhook response: %w", err), code: http.StatusInternalServerError}
	}
	if len(patch) == 0 {
		return false, nil
	}
	if obj == nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", h.name))
	}
	if resp.patchType != admissionv1.PatchTypeJSONPatch {
		return false, &callError{name: h.name, reason: fmt.Errorf("unsupported patch type %q", resp.patchType), code: http.StatusInternalServerError}
	}
	js, err := encode(obj, inv.kind)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	patched, err := patch.Apply(js)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	next, err := decodeLike(obj, patched)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if m.r.versions != nil {
		// What the patch left out gets its default again.
		m.r.versions.Default(next)
	}
	if apiequality.Semantic.DeepEqual(obj, next) {
		return false, nil
	}
	if inv.kind != a.Kind {
		// Back to the request's version.
		if next, err = m.r.versions.Convert(ctx, next, a.Kind); err != nil {
			return false, apierrors.NewInternalError(err)
		}
	}
	if err := replace(a.Object, next); err != nil {
		return false, apierrors.NewInternalError(err)
	}
	m.r.forget()
	return true, nil
}

// replace sets dst's contents to src's (both of one Go type), so that
// whoever holds the request's object sees the change.
func replace(dst, src runtime.Object) error {
	if du, ok := dst.(*unstructured.Unstructured); ok {
		su, ok := src.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("cannot set %T from %T", dst, src)
		}
		du.Object = su.Object
		return nil
	}
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
	if dv.Type() != sv.Type() || dv.Kind() != reflect.Pointer {
		return fmt.Errorf("cannot set %T from %T", dst, src)
	}
	gvk := dst.GetObjectKind().GroupVersionKind()
	dv.Elem().Set(sv.Elem())
	dst.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// mutationAnnotation is upstream's audit annotation of one mutating
// webhook's call.
func mutationAnnotation(h *hook, mutated bool) string {
	b, _ := json.Marshal(struct {
		Configuration string `json:"configuration"`
		Webhook       string `json:"webhook"`
		Mutated       bool   `json:"mutated"`
	}{h.configuration, h.name, mutated})
	return string(b)
}
