// Package admissionregistration supplies the registry.Resource
// descriptions of admissionregistration.k8s.io/v1
// mutatingwebhookconfigurations and validatingwebhookconfigurations, and
// of the admission policies upstream 1.37 serves at v1 by default:
// validatingadmissionpolicies (with /status), validatingadmissionpolicybindings,
// mutatingadmissionpolicies and mutatingadmissionpolicybindings.
//
// Defaults follow upstream: failurePolicy Fail, matchPolicy Equivalent,
// empty namespace and object selectors, timeoutSeconds 10, rule scope "*",
// service port 443, and for mutating webhooks reinvocationPolicy Never.
// Validation uses upstream's field paths and messages: webhook names are
// fully qualified (at least three dot-separated segments) and unique,
// exactly one of clientConfig.url (https, no user, query or fragment) and
// clientConfig.service, rules with operations, groups, versions and
// resources, sideEffects None or NoneOnDryRun, admissionReviewVersions
// including v1 or v1beta1, timeouts of 1–30 seconds. The configurations
// track generation.
//
// Policies default failurePolicy to Fail and their matchConstraints (and
// bindings' matchResources) as webhooks'; their CEL expressions
// (validations, messageExpressions, variables, matchConditions, audit
// annotations, mutations) are compiled with Kubernetes' CEL environment
// when written, and one that does not compile is refused with upstream's
// field error; so are webhooks' matchConditions.
package admissionregistration

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the admissionregistration.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{
		mutatingWebhookConfigurations(), validatingWebhookConfigurations(),
		validatingAdmissionPolicies(), validatingAdmissionPolicyBindings(),
		mutatingAdmissionPolicies(), mutatingAdmissionPolicyBindings(),
	}
}
