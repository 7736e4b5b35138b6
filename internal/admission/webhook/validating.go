package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"plainkube.dev/plainkube/internal/admission"
)

// validate calls every validating webhook that matches the request, in
// parallel; the first refusal (in the webhooks' order) refuses it.
func (w *Webhooks) validate(ctx context.Context, a *admission.Attributes) error {
	if exempt(a) {
		return nil
	}
	wr, err := w.ready(ctx, a)
	if err != nil {
		return err
	}
	hooks := wr.src.Validating()
	if len(hooks) == 0 {
		return nil
	}
	defer func(start time.Time) { admission.AddWebhookTime(ctx, time.Since(start)) }(time.Now())
	r := newRequest(a, wr.src, wr.versions)
	type call struct {
		inv      *invocation
		obj, old runtime.Object
	}
	var calls []call
	for _, h := range hooks {
		inv, err := r.shouldCall(ctx, h, w.authz)
		if err != nil {
			return err
		}
		if inv == nil {
			continue
		}
		obj, old, err := r.objects(ctx, inv.kind)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		calls = append(calls, call{inv, obj, old})
	}
	if len(calls) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
	}
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			h := c.inv.hook
			defer func() {
				if p := recover(); p != nil {
					errs[i] = apierrors.NewInternalError(fmt.Errorf("%s/%v has panicked: %v", ValidatingName, h.name, p))
				}
			}()
			start := time.Now()
			_, err := w.call(ctx, wr, a, c.inv, c.obj, c.old)
			w.observe(a, c.inv, start, err)
			var ce *callError
			if errors.As(err, &ce) {
				if h.ignoresFailures() {
					w.failedOpen(a, h, fmt.Sprintf("failed-open.validating.webhook.admission.k8s.io/round_0_index_%d", i), err)
					return
				}
				err = apierrors.NewInternalError(err)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
