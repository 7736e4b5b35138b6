package certificates

import (
	"fmt"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's bounds on a pod certificate's maxExpirationSeconds, shared by
// PodCertificateRequests and pods' podCertificate projections.
const (
	// spec.maxExpirationSeconds: at least an hour; at most a day for
	// kubernetes.io signers, 91 days for the others.
	MinMaxExpirationSeconds           = 60 * 60
	KubernetesMaxMaxExpirationSeconds = 24 * 60 * 60
	MaxMaxExpirationSeconds           = 91 * 24 * 60 * 60
)

// ValidateSignerName: "<domain>/<path>", the domain of at least two DNS
// labels, the path of DNS subdomains separated by dots.
func ValidateSignerName(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	segments := strings.Split(name, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	domain, rest := segments[0], segments[1]
	if len(domain) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(p, domain, validation.DNS1123SubdomainMaxLength))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msgs := validation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(p, domain, fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break
		}
	}
	if len(labels) < 2 {
		errs = append(errs, field.Invalid(p, domain, "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(rest, ".") {
		if msgs := validation.IsDNS1123Subdomain(l); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(p, rest, fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break
		}
	}
	maxLen := validation.DNS1123SubdomainMaxLength + (validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 1) + 1
	if len(name) > maxLen {
		errs = append(errs, field.TooLong(p, name, maxLen))
	}
	return errs
}

// ValidateUserAnnotations: domain-prefixed keys (any case), within the
// annotations' total size limit.
func ValidateUserAnnotations(annotations map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		errs = append(errs, validation.IsDomainPrefixedKey(p, strings.ToLower(k))...)
	}
	if err := apivalidation.ValidateAnnotationsSize(annotations); err != nil {
		errs = append(errs, field.TooLong(p, "", apivalidation.TotalAnnotationSizeLimitB))
	}
	return errs
}

// IsKubernetesSigner: the signer's domain is kubernetes.io or one of its
// subdomains, reserved to the Kubernetes project.
func IsKubernetesSigner(signerName string) bool {
	domain, _, _ := strings.Cut(signerName, "/")
	return domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io")
}

// ClusterTrustBundleNameRule is upstream's naming rule: a bundle without a signer has
// no ":" in its name; a bundle of signer "example.com/foo" is named
// "example.com:foo:<anything valid>".
func ClusterTrustBundleNameRule(signerName string) func(name string, prefix bool) []string {
	return func(name string, prefix bool) []string {
		if signerName == "" {
			if strings.Contains(name, ":") {
				return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
			}
			return apivalidation.NameIsDNSSubdomain(name, prefix)
		}
		required := strings.ReplaceAll(signerName, "/", ":") + ":"
		rest, ok := strings.CutPrefix(name, required)
		if !ok {
			return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signerName, required)}
		}
		return apivalidation.NameIsDNSSubdomain(rest, prefix)
	}
}
