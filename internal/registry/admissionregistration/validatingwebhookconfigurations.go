package admissionregistration

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func validatingWebhookConfigurations() registry.Resource {
	return registry.Resource{
		Kind:             admissionv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"),
		Plural:           "validatingwebhookconfigurations",
		Singular:         "validatingwebhookconfiguration",
		Categories:       []string{"api-extensions"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				c := obj.(*admissionv1.ValidatingWebhookConfiguration)
				for i := range c.Webhooks {
					defaultWebhook(validatingView(&c.Webhooks[i]))
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				c := obj.(*admissionv1.ValidatingWebhookConfiguration)
				views := make([]webhook, len(c.Webhooks))
				for i := range c.Webhooks {
					views[i] = validatingView(&c.Webhooks[i])
				}
				return validateWebhooks(views, nil)
			},
		},
	}
}

func validatingView(w *admissionv1.ValidatingWebhook) webhook {
	return webhook{
		name:                    w.Name,
		clientConfig:            &w.ClientConfig,
		rules:                   w.Rules,
		failurePolicy:           &w.FailurePolicy,
		matchPolicy:             &w.MatchPolicy,
		namespaceSelector:       &w.NamespaceSelector,
		objectSelector:          &w.ObjectSelector,
		sideEffects:             w.SideEffects,
		timeoutSeconds:          &w.TimeoutSeconds,
		admissionReviewVersions: w.AdmissionReviewVersions,
		matchConditions:         w.MatchConditions,
	}
}
