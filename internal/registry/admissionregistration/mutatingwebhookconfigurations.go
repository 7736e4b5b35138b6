package admissionregistration

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func mutatingWebhookConfigurations() registry.Resource {
	return registry.Resource{
		Kind:             admissionv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"),
		Plural:           "mutatingwebhookconfigurations",
		Singular:         "mutatingwebhookconfiguration",
		Categories:       []string{"api-extensions"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				c := obj.(*admissionv1.MutatingWebhookConfiguration)
				for i := range c.Webhooks {
					w := &c.Webhooks[i]
					defaultWebhook(mutatingView(w))
					if w.ReinvocationPolicy == nil {
						w.ReinvocationPolicy = ptr(admissionv1.NeverReinvocationPolicy)
					}
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				c := obj.(*admissionv1.MutatingWebhookConfiguration)
				views := make([]webhook, len(c.Webhooks))
				for i := range c.Webhooks {
					views[i] = mutatingView(&c.Webhooks[i])
				}
				return validateWebhooks(views, func(i int, p *field.Path) field.ErrorList {
					rp := c.Webhooks[i].ReinvocationPolicy
					if rp != nil && *rp != admissionv1.NeverReinvocationPolicy && *rp != admissionv1.IfNeededReinvocationPolicy {
						return field.ErrorList{field.NotSupported(p.Child("reinvocationPolicy"), *rp,
							[]string{string(admissionv1.IfNeededReinvocationPolicy), string(admissionv1.NeverReinvocationPolicy)})}
					}
					return nil
				})
			},
		},
	}
}

func mutatingView(w *admissionv1.MutatingWebhook) webhook {
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
