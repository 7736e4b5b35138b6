// Package policy is the ValidatingAdmissionPolicy admission plugin:
// policies and their bindings (admissionregistration.k8s.io/v1), the
// param objects they name and namespaces are read through informers over
// the API server's loopback client (Source), so a new policy or binding
// takes effect as soon as its watch event arrives. Each request the
// plugin sees is matched against every policy's matchConstraints and its
// bindings' matchResources (package matching), and the matching policies'
// CEL expressions — compiled and evaluated with k8s.io/apiserver's
// admission CEL libraries, Kubernetes' environment and cost limits — are
// evaluated once per param object; failures are acted on as the binding's
// validationActions say (Deny refuses with upstream's message, Warn adds a
// Warning header, Audit an audit annotation).
//
// The source also type-checks each policy generation against the OpenAPI
// schemas the API server publishes and writes status.typeChecking and
// status.observedGeneration, as upstream's type-checking controller.
//
// Mutating is the MutatingAdmissionPolicy plugin over the same source:
// the matching policies' mutations (ApplyConfiguration, merged with the
// kind's schema from the API server's OpenAPI, and JSONPatch) are applied
// to the request's object in policy name order; a policy with
// reinvocationPolicy IfNeeded runs again when a later policy changed the
// object. Reinvocation after other mutating plugins (webhooks) is not
// done: the chain has no reinvocation pass yet.
package policy
