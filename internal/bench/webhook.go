package bench

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// webhookLabel marks the namespace whose ConfigMap writes the bench's
// webhook is called for.
const webhookLabel = "bench.plainkube.dev/webhook"

// allowingWebhook is a validating admission webhook on loopback that
// allows every request, counting the calls and the connections the API
// server opened to make them.
type allowingWebhook struct {
	srv          *httptest.Server
	calls, conns atomic.Int64
}

func startAllowingWebhook() *allowingWebhook {
	w := &allowingWebhook{}
	w.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(req.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(rw, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		w.calls.Add(1)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(&review)
	}))
	w.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			w.conns.Add(1)
		}
	}
	w.srv.StartTLS()
	return w
}

// configuration registers the webhook for ConfigMap creates and updates in
// namespaces labelled webhookLabel.
func (w *allowingWebhook) configuration(name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.srv.Certificate().Raw})
	url := w.srv.URL + "/validate"
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	timeout := int32(5)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "allow.bench.plainkube.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{webhookLabel: "true"}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// runWebhook measures what one validating webhook call on this machine adds
// to a write: ConfigMap creates alternate, one at a time, between a
// namespace the webhook is registered for and one it is not, and the two
// latency series are reported side by side with their p50 difference. The
// connections the API server opened to the webhook, against its calls,
// show whether it keeps them alive.
func runWebhook(ctx context.Context, o *Options, r *Result) error {
	d := o.Duration
	if d <= 0 {
		d = 5 * time.Second
	}
	cs, err := clientFor(o.Config, 1)
	if err != nil {
		return err
	}
	hook := startAllowingWebhook()
	defer hook.srv.Close()
	cfg := hook.configuration(fmt.Sprintf("plainkube-bench-webhook-%d", time.Now().UnixNano()))
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering the webhook: %w", err)
	}
	defer cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
	namespace := func(labels map[string]string) (string, error) {
		ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-webhook-", Labels: labels}}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("creating namespace: %w", err)
		}
		return ns.Name, nil
	}
	plain, err := namespace(nil)
	if err != nil {
		return err
	}
	defer cs.CoreV1().Namespaces().Delete(context.Background(), plain, metav1.DeleteOptions{})
	hooked, err := namespace(map[string]string{webhookLabel: "true"})
	if err != nil {
		return err
	}
	defer cs.CoreV1().Namespaces().Delete(context.Background(), hooked, metav1.DeleteOptions{})

	// The API server sees the configuration through its watch: wait until
	// a create is seen by the webhook.
	seen := time.Now().Add(10 * time.Second)
	for i := 0; hook.calls.Load() == 0; i++ {
		if time.Now().After(seen) {
			return fmt.Errorf("the API server did not call the webhook within 10 s of its registration")
		}
		if _, err := createAndDelete(ctx, cs, hooked, fmt.Sprintf("warm-%d", i)); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	callsBefore, connsBefore := hook.calls.Load(), hook.conns.Load()

	var without, with latencies
	deadline := time.Now().Add(d)
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		l, err := createAndDelete(ctx, cs, plain, fmt.Sprintf("o-%d", i))
		if err != nil {
			return err
		}
		without = append(without, l)
		if l, err = createAndDelete(ctx, cs, hooked, fmt.Sprintf("o-%d", i)); err != nil {
			return err
		}
		with = append(with, l)
	}
	without.addTo(r, "create_without_webhook")
	with.addTo(r, "create_with_webhook")
	r.add("webhook_added_p50", with.percentile(0.5)-without.percentile(0.5), "ms")
	r.add("webhook_calls", float64(hook.calls.Load()-callsBefore), "count")
	r.add("webhook_connections_opened", float64(hook.conns.Load()-connsBefore), "count")
	return nil
}

// createAndDelete creates a ConfigMap, returning the create's latency, and
// deletes it.
func createAndDelete(ctx context.Context, cs kubernetes.Interface, ns, name string) (time.Duration, error) {
	c := cs.CoreV1().ConfigMaps(ns)
	t := time.Now()
	if _, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("create in %s: %w", ns, err)
	}
	l := time.Since(t)
	return l, c.Delete(ctx, name, metav1.DeleteOptions{})
}
