package webhook

import (
	"context"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/webhook/webhooktest"
)

// BenchmarkWebhookCall is the cost one matching webhook adds to a
// request: a validating and a mutating (JSON patch) webhook each served
// over TLS on 127.0.0.1, called through the plugins with kept-alive
// connections. It reports the median as p50-ms.
func BenchmarkWebhookCall(b *testing.B) {
	srv := webhooktest.New(b, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	pt := admissionv1.PatchTypeJSONPatch
	patcher := webhooktest.New(b, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: []byte(`[{"op":"add","path":"/data/added","value":"yes"}]`)}
	})
	for _, c := range []struct {
		name string
		src  *staticSource
		run  func(w *Webhooks) func(context.Context, *admission.Attributes) error
	}{
		{"validating", &staticSource{validating: validating("v", validatingWebhook("v.example.com", srv.URL, srv.CAPEM))},
			func(w *Webhooks) func(context.Context, *admission.Attributes) error { return w.validate }},
		{"mutating", &staticSource{mutating: mutating("m", mutatingWebhook("m.example.com", patcher.URL, patcher.CAPEM))},
			func(w *Webhooks) func(context.Context, *admission.Attributes) error { return w.mutate }},
	} {
		b.Run(c.name, func(b *testing.B) {
			w := plugins(c.src)
			run := c.run(w)
			ctx := context.Background()
			if err := run(ctx, createConfigMap(configMap("c", nil))); err != nil {
				b.Fatal(err)
			}
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				a := createConfigMap(configMap("c", nil))
				start := time.Now()
				if err := run(ctx, a); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2])/float64(time.Millisecond), "p50-ms")
		})
	}
}
