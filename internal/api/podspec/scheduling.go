package podspec

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateTolerations checks tolerations: keys are label names, the
// operator/value/effect combinations are consistent.
func ValidateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			allErrs = append(allErrs, metavalidation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(p.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if errs := validation.IsValidLabelValue(t.Value); len(errs) != 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("operator"), t.Value, strings.Join(errs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				allErrs = append(allErrs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(p.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" {
			allErrs = append(allErrs, ValidateTaintEffect(t.Effect, true, p.Child("effect"))...)
		}
	}
	return allErrs
}

// ValidateTaintEffect checks a taint or toleration effect.
func ValidateTaintEffect(effect corev1.TaintEffect, allowEmpty bool, fldPath *field.Path) field.ErrorList {
	if !allowEmpty && effect == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	valid := []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	if !contains(valid, effect) {
		return field.ErrorList{field.NotSupported(fldPath, effect, valid)}
	}
	return nil
}

func validateAffinity(a *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var allErrs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := fldPath.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			allErrs = append(allErrs, ValidateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, false, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if t.Weight <= 0 || t.Weight > 100 {
				allErrs = append(allErrs, field.Invalid(tp.Child("weight"), t.Weight, "must be in the range 1-100"))
			}
			allErrs = append(allErrs, validateNodeSelectorTerm(t.Preference, true, tp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		allErrs = append(allErrs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		allErrs = append(allErrs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAntiAffinity"))...)
	}
	return allErrs
}

func validatePodAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range required {
		allErrs = append(allErrs, validatePodAffinityTerm(t, fldPath.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i, w := range preferred {
		p := fldPath.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		if w.Weight <= 0 || w.Weight > 100 {
			allErrs = append(allErrs, field.Invalid(p.Child("weight"), w.Weight, "must be in the range 1-100"))
		}
		allErrs = append(allErrs, validatePodAffinityTerm(w.PodAffinityTerm, p.Child("podAffinityTerm"))...)
	}
	return allErrs
}

func validatePodAffinityTerm(t corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	opts := metavalidation.LabelSelectorValidationOptions{}
	allErrs := metavalidation.ValidateLabelSelector(t.LabelSelector, opts, fldPath.Child("labelSelector"))
	allErrs = append(allErrs, metavalidation.ValidateLabelSelector(t.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("namespace"), ns, msg))
		}
	}
	allErrs = append(allErrs, validateMatchLabelKeys(fldPath, t.MatchLabelKeys, t.MismatchLabelKeys, t.LabelSelector)...)
	if t.TopologyKey == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	}
	return append(allErrs, metavalidation.ValidateLabelName(t.TopologyKey, fldPath.Child("topologyKey"))...)
}

func validateMatchLabelKeys(fldPath *field.Path, match, mismatch []string, sel *metav1.LabelSelector) field.ErrorList {
	var allErrs field.ErrorList
	for _, lk := range []struct {
		keys []string
		name string
	}{{match, "matchLabelKeys"}, {mismatch, "mismatchLabelKeys"}} {
		if len(lk.keys) == 0 {
			continue
		}
		if sel == nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(lk.name), "must not be specified when labelSelector is not set"))
			continue
		}
		for i, k := range lk.keys {
			allErrs = append(allErrs, metavalidation.ValidateLabelName(k, fldPath.Child(lk.name).Index(i))...)
		}
	}
	mm := sets.New(mismatch...)
	for i, k := range match {
		if mm.Has(k) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	return allErrs
}

// ValidateNodeSelector checks a required node selector (node affinity, PV
// node affinity).
func ValidateNodeSelector(ns *corev1.NodeSelector, allowInvalidLabelValue bool, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(ns.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var allErrs field.ErrorList
	for i, t := range ns.NodeSelectorTerms {
		allErrs = append(allErrs, validateNodeSelectorTerm(t, allowInvalidLabelValue, termsPath.Index(i))...)
	}
	return allErrs
}

func validateNodeSelectorTerm(t corev1.NodeSelectorTerm, allowInvalidLabelValue bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for j, r := range t.MatchExpressions {
		allErrs = append(allErrs, validateNodeSelectorRequirement(r, allowInvalidLabelValue, fldPath.Child("matchExpressions").Index(j))...)
	}
	for j, r := range t.MatchFields {
		p := fldPath.Child("matchFields").Index(j)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) != 1 {
				allErrs = append(allErrs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			allErrs = append(allErrs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		if r.Key != metav1.ObjectNameField {
			allErrs = append(allErrs, field.Invalid(p.Child("key"), r.Key, "not a valid field selector key"))
		} else {
			for i, v := range r.Values {
				for _, msg := range apivalidation.NameIsDNSSubdomain(v, false) {
					allErrs = append(allErrs, field.Invalid(p.Child("values").Index(i), v, msg))
				}
			}
		}
	}
	return allErrs
}

func validateNodeSelectorRequirement(r corev1.NodeSelectorRequirement, allowInvalidLabelValue bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("operator"), r.Operator, "not a valid selector operator"))
	}
	allErrs = append(allErrs, metavalidation.ValidateLabelName(r.Key, fldPath.Child("key"))...)
	if !allowInvalidLabelValue {
		for i, v := range r.Values {
			for _, msg := range validation.IsValidLabelValue(v) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("values").Index(i), v, msg))
			}
		}
	}
	return allErrs
}

func validateTopologySpreadConstraints(cs []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range cs {
		p := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			allErrs = append(allErrs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		actions := []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}
		if !contains(actions, c.WhenUnsatisfiable) {
			allErrs = append(allErrs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, actions))
		}
		for _, rest := range cs[i+1:] {
			if c.TopologyKey == rest.TopologyKey && c.WhenUnsatisfiable == rest.WhenUnsatisfiable {
				allErrs = append(allErrs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("minDomains"), c.MinDomains, "must be greater than zero"))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				allErrs = append(allErrs, field.Invalid(p.Child("minDomains"), c.MinDomains,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		policies := []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}
		if c.NodeAffinityPolicy != nil && !contains(policies, *c.NodeAffinityPolicy) {
			allErrs = append(allErrs, field.NotSupported(p.Child("nodeAffinityPolicy"), c.NodeAffinityPolicy, policies))
		}
		if c.NodeTaintsPolicy != nil && !contains(policies, *c.NodeTaintsPolicy) {
			allErrs = append(allErrs, field.NotSupported(p.Child("nodeTaintsPolicy"), c.NodeTaintsPolicy, policies))
		}
		if len(c.MatchLabelKeys) > 0 {
			mp := p.Child("matchLabelKeys")
			selKeys := sets.New[string]()
			if c.LabelSelector == nil {
				allErrs = append(allErrs, field.Forbidden(mp, "must not be specified when labelSelector is not set"))
			} else {
				for k := range c.LabelSelector.MatchLabels {
					selKeys.Insert(k)
				}
				for _, e := range c.LabelSelector.MatchExpressions {
					selKeys.Insert(e.Key)
				}
			}
			for j, k := range c.MatchLabelKeys {
				allErrs = append(allErrs, metavalidation.ValidateLabelName(k, mp.Index(j))...)
				if selKeys.Has(k) {
					allErrs = append(allErrs, field.Invalid(mp.Index(j), k, "exists in both matchLabelKeys and labelSelector"))
				}
			}
		}
		allErrs = append(allErrs, metavalidation.ValidateLabelSelector(c.LabelSelector, metavalidation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return allErrs
}

const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

func validateDNSConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone))}
		}
	}
	if cfg == nil {
		return nil
	}
	var allErrs field.ErrorList
	if len(cfg.Nameservers) > maxDNSNameservers {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		allErrs = append(allErrs, validation.IsValidIP(fldPath.Child("nameservers").Index(i), ns)...)
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(cfg.Searches, " ")) > maxDNSSearchListChars {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, s := range cfg.Searches {
		if s == "." {
			continue
		}
		s = strings.TrimSuffix(s, ".")
		for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(s) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("searches").Index(i), s, msg))
		}
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return allErrs
}
