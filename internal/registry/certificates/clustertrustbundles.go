package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apicertificates "plainkube.dev/plainkube/internal/api/certificates"
	"plainkube.dev/plainkube/internal/registry"
)

// maxTrustBundleSize is upstream's limit on spec.trustBundle (1 MiB).
const maxTrustBundleSize = 1 << 20

func clusterTrustBundles() registry.Resource {
	return registry.Resource{
		Kind:     certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"),
		Plural:   "clustertrustbundles",
		Singular: "clustertrustbundle",
		Strategy: registry.Strategy{
			// The name rule depends on spec.signerName, so Validate
			// checks names (see validateCTBName).
			ValidateName: func(string, bool) []string { return nil },
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateCTB(obj.(*certificatesv1.ClusterTrustBundle), true)
			},
			ValidateUpdateOnly: true,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				ctb, o := obj.(*certificatesv1.ClusterTrustBundle), old.(*certificatesv1.ClusterTrustBundle)
				// An unchanged bundle is not parsed again: what an older
				// parser accepted stays updatable.
				errs := validateCTB(ctb, ctb.Spec.TrustBundle != o.Spec.TrustBundle)
				return append(errs, apivalidation.ValidateImmutableField(ctb.Spec.SignerName, o.Spec.SignerName, field.NewPath("spec", "signerName"))...)
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				return fields.Set{"spec.signerName": obj.(*certificatesv1.ClusterTrustBundle).Spec.SignerName}
			},
		},
	}
}

func validateCTB(ctb *certificatesv1.ClusterTrustBundle, parseBundle bool) field.ErrorList {
	var errs field.ErrorList
	mp := field.NewPath("metadata")
	nameRule := apicertificates.ClusterTrustBundleNameRule(ctb.Spec.SignerName)
	if g := ctb.GenerateName; g != "" {
		for _, msg := range nameRule(g, true) {
			errs = append(errs, field.Invalid(mp.Child("generateName"), g, msg))
		}
	}
	if ctb.Name != "" {
		for _, msg := range nameRule(ctb.Name, false) {
			errs = append(errs, field.Invalid(mp.Child("name"), ctb.Name, msg))
		}
	}
	if ctb.Spec.SignerName != "" {
		errs = append(errs, apicertificates.ValidateSignerName(field.NewPath("spec", "signerName"), ctb.Spec.SignerName)...)
	}
	if parseBundle {
		errs = append(errs, validateTrustBundle(field.NewPath("spec", "trustBundle"), ctb.Spec.TrustBundle)...)
	}
	return errs
}

// validateTrustBundle accepts at most 1 MiB of PEM CERTIFICATE blocks,
// each without headers and holding one CA certificate, at least one of
// them and none twice.
func validateTrustBundle(p *field.Path, bundle string) field.ErrorList {
	if len(bundle) > maxTrustBundleSize {
		return field.ErrorList{field.TooLong(p, "", maxTrustBundleSize)}
	}
	var errs field.ErrorList
	invalid := func(format string, args ...interface{}) {
		errs = append(errs, field.Invalid(p, "<value omitted>", fmt.Sprintf(format, args...)))
	}
	seen := map[string][]int{}
	var order []string
	rest := []byte(bundle)
	for i := 0; ; i++ {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			invalid("entry %d has bad block type: %v", i, block.Type)
			continue
		}
		if len(block.Headers) != 0 {
			invalid("entry %d has PEM block headers", i)
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		switch {
		case err != nil:
			invalid("entry %d does not parse as X.509", i)
			continue
		case !cert.IsCA:
			invalid("entry %d does not have the CA bit set", i)
			continue
		case !cert.BasicConstraintsValid:
			invalid("entry %d has invalid basic constraints", i)
			continue
		}
		key := string(block.Bytes)
		if _, ok := seen[key]; !ok {
			order = append(order, key)
		}
		seen[key] = append(seen[key], i)
	}
	// A malformed block says enough: no duplicate or emptiness errors.
	if len(errs) != 0 {
		return errs
	}
	if len(seen) == 0 {
		invalid("at least one trust anchor must be provided")
	}
	for _, key := range order {
		if indices := seen[key]; len(indices) > 1 {
			invalid("duplicate trust anchor (indices %v)", indices)
		}
	}
	return errs
}
