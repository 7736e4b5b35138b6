// Package customresource turns a CustomResourceDefinition into the
// custom.Resource the API server serves: for each version its
// names (the CRD's accepted names), subresources, and a Strategy over
// *unstructured.Unstructured objects built from upstream's published
// packages of k8s.io/apiextensions-apiserver, exactly as upstream's
// customresource registry uses them:
//
//   - decoding: pruning of fields the structural schema does not declare
//     (pkg/apiserver/schema/pruning, x-kubernetes-preserve-unknown-fields
//     honoured), removal of nulls that are neither nullable nor defaulted,
//     and ObjectMeta coercion (pkg/apiserver/schema/objectmeta) — the
//     pruned paths become fieldValidation warnings or errors;
//   - defaulting from `default:` (pkg/apiserver/schema/defaulting);
//   - validation: the OpenAPI schema (pkg/apiserver/validation, with
//     ratcheting of unchanged invalid values), embedded resources' metadata,
//     list-type uniqueness (pkg/apiserver/schema/listtype), CEL rules
//     including transition rules (pkg/apiserver/schema/cel), and the scale
//     subresource's paths;
//   - status and scale subresources, selectable fields, and
//     additionalPrinterColumns (NAME and AGE when none are given) evaluated
//     with client-go's jsonpath as upstream's table convertor does;
//   - conversion between versions: None relabels apiVersion, Webhook sends
//     a ConversionReview over HTTPS trusting the CRD's caBundle;
//   - the deprecation warning of deprecated versions.
//
// It is pure: New reads only the CRD (and, for webhooks to a service, the
// resolver it is given).
package customresource
