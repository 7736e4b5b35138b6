package server

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission/webhook/webhooktest"
)

// metricValue is the value of the sample of metric with exactly labels in
// a Prometheus text exposition (-1: none).
func metricValue(text, metric string, labels map[string]string) float64 {
	for _, line := range strings.Split(text, "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || name != metric {
			continue
		}
		set, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		got := map[string]string{}
		for _, pair := range strings.Split(set, ",") {
			k, v, _ := strings.Cut(pair, "=")
			got[k] = strings.Trim(v, `"`)
		}
		if !mapsEqual(got, labels) {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return -1
		}
		return f
	}
	return -1
}

// TestAdmissionMetrics: /metrics serves upstream's admission metrics, by
// name and labels: the chain's steps, each plugin, and each webhook call
// — allowed, refused by the webhook, failed with failurePolicy Fail, and
// failed open with Ignore.
func TestAdmissionMetrics(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	vwc := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	sel := webhookTestNamespace(t, cs, "wh-metrics")

	deny := webhooktest.New(t, func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var cm corev1.ConfigMap
		json.Unmarshal(r.Object.Raw, &cm)
		if cm.Labels["forbidden"] == "yes" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: 403, Message: "no"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	if _, err := vwc.Create(ctx, validatingConfig("metrics-deny", configMapWebhook("deny.metrics.example.com", deny.URL, deny.CAPEM, sel)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err, _ := createUntil(t, cs, "wh-metrics", "refused", map[string]string{"forbidden": "yes"}, func(err error) bool { return err != nil }); err == nil {
		t.Fatal("the labelled configmap was admitted")
	}
	if _, err := cs.CoreV1().ConfigMaps("wh-metrics").Create(ctx, newConfigMap("wh-metrics", "plain", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := vwc.Delete(ctx, "metrics-deny", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	mutator := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	mwc := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := mwc.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "metrics-mutate"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.metrics.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(mutator.URL), CABundle: mutator.CAPEM}, Rules: configMapsRule,
			NamespaceSelector: sel, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err, _ := createUntil(t, cs, "wh-metrics", "mutated", nil, func(error) bool { return len(mutator.Requests()) > 0 }); err != nil {
		t.Fatal(err)
	}
	if err := mwc.Delete(ctx, "metrics-mutate", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + ln.Addr().String() + "/down"
	ln.Close()
	down, err := vwc.Create(ctx, validatingConfig("metrics-down", configMapWebhook("down.metrics.example.com", url, nil, sel)), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err, _ := createUntil(t, cs, "wh-metrics", "fail", nil, func(err error) bool { return err != nil }); err == nil {
		t.Fatal("failurePolicy Fail with an unreachable webhook admitted a configmap")
	}
	down.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	if _, err := vwc.Update(ctx, down, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err, _ := createUntil(t, cs, "wh-metrics", "ignore", nil, func(err error) bool { return err == nil }); err != nil {
		t.Fatalf("failurePolicy Ignore: %v", err)
	}

	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, c := range []struct {
		metric string
		labels map[string]string
	}{
		{"apiserver_admission_step_admission_duration_seconds_count", map[string]string{"type": "admit", "operation": "CREATE", "rejected": "false"}},
		{"apiserver_admission_step_admission_duration_seconds_count", map[string]string{"type": "validate", "operation": "CREATE", "rejected": "true"}},
		{"apiserver_admission_controller_admission_duration_seconds_count", map[string]string{"name": "NamespaceLifecycle", "type": "admit", "operation": "CREATE", "rejected": "false"}},
		{"apiserver_admission_controller_admission_duration_seconds_count", map[string]string{"name": "ValidatingAdmissionWebhook", "type": "validate", "operation": "CREATE", "rejected": "true"}},
		{"apiserver_admission_webhook_admission_duration_seconds_count", map[string]string{"name": "deny.metrics.example.com", "type": "validating", "operation": "CREATE", "rejected": "true"}},
		{"apiserver_admission_webhook_admission_duration_seconds_count", map[string]string{"name": "mutate.metrics.example.com", "type": "admit", "operation": "CREATE", "rejected": "false"}},
		{"apiserver_admission_webhook_request_total", map[string]string{"name": "deny.metrics.example.com", "type": "validating", "operation": "CREATE", "code": "403", "rejected": "true"}},
		{"apiserver_admission_webhook_request_total", map[string]string{"name": "deny.metrics.example.com", "type": "validating", "operation": "CREATE", "code": "200", "rejected": "false"}},
		{"apiserver_admission_webhook_request_total", map[string]string{"name": "mutate.metrics.example.com", "type": "admit", "operation": "CREATE", "code": "200", "rejected": "false"}},
		{"apiserver_admission_webhook_request_total", map[string]string{"name": "down.metrics.example.com", "type": "validating", "operation": "CREATE", "code": "503", "rejected": "true"}},
		{"apiserver_admission_webhook_request_total", map[string]string{"name": "down.metrics.example.com", "type": "validating", "operation": "CREATE", "code": "503", "rejected": "false"}},
		{"apiserver_admission_webhook_rejection_count", map[string]string{"name": "deny.metrics.example.com", "type": "validating", "operation": "CREATE", "error_type": "no_error", "rejection_code": "403"}},
		{"apiserver_admission_webhook_rejection_count", map[string]string{"name": "down.metrics.example.com", "type": "validating", "operation": "CREATE", "error_type": "calling_webhook_error", "rejection_code": "503"}},
		{"apiserver_admission_webhook_fail_open_count", map[string]string{"name": "down.metrics.example.com", "type": "validating"}},
	} {
		if v := metricValue(text, c.metric, c.labels); v < 1 {
			t.Errorf("%s%v: %v, want at least 1", c.metric, c.labels, v)
		}
	}
	if t.Failed() {
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "apiserver_admission_webhook") {
				t.Log(line)
			}
		}
	}
}
