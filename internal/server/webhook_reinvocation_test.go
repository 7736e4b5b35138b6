package server

import (
	"context"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission/webhook/webhooktest"
)

// TestWebhookPatchIsAdmittedAgain: a mutating webhook whose patch removes
// a pod's terminationMessagePath and priority gets a pod that is defaulted
// again after the patch and that the Priority plugin, run a second time
// because a webhook changed the object, gives its priority back.
func TestWebhookPatchIsAdmittedAgain(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	sel := webhookTestNamespace(t, cs, "wh-readmit")
	remover := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt,
			Patch: []byte(`[{"op":"remove","path":"/spec/priority"},{"op":"remove","path":"/spec/containers/0/terminationMessagePath"}]`)}
	})
	url := remover.URL
	_, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "remover"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "remover.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: remover.CAPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector: sel, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; ; i++ {
		pod, err := cs.CoreV1().Pods("wh-readmit").Create(ctx, simplePod("p-"+strconv.Itoa(i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(remover.Requests()) > 0 {
			c := pod.Spec.Containers[0]
			if c.TerminationMessagePath != corev1.TerminationMessagePathDefault {
				t.Errorf("terminationMessagePath %q after the patch removed it, want the default", c.TerminationMessagePath)
			}
			if pod.Spec.Priority == nil || *pod.Spec.Priority != 0 {
				t.Errorf("priority %v after the patch removed it, want 0 again", pod.Spec.Priority)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the webhook was not called within 2 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
