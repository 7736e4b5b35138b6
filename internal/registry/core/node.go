package core

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/registry/core/subresources"
)

func nodes() registry.Resource {
	return registry.Resource{
		Kind:         corev1.SchemeGroupVersion.WithKind("Node"),
		Plural:       "nodes",
		Singular:     "node",
		ShortNames:   []string{"no"},
		Namespaced:   false,
		Subresources: []string{"status", "proxy"},
		Handlers:     map[string]registry.Handler{"proxy": subresources.Proxy},
		// Nodes may set every field, status included, on create (a node
		// agent registers with its capacity), so there is no PrepareForCreate.
		Strategy: registry.Strategy{
			Default:  func(obj runtime.Object) { defaultNode(obj.(*corev1.Node)) },
			Validate: validated(func(obj runtime.Object) field.ErrorList { return validateNode(obj.(*corev1.Node)) }),
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateNodeUpdate(obj.(*corev1.Node), old.(*corev1.Node))
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				return validateNodeStatus(obj.(*corev1.Node))
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
			},
		},
	}
}

func defaultNode(n *corev1.Node) {
	// spec.podCIDR is the first of spec.podCIDRs (upstream's conversion).
	if n.Spec.PodCIDR != "" && len(n.Spec.PodCIDRs) == 0 {
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
	} else if len(n.Spec.PodCIDRs) > 0 {
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
	podspec.RoundUpResourceList(n.Status.Capacity)
	podspec.RoundUpResourceList(n.Status.Allocatable)
}

func validateNode(n *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	if len(n.Spec.Taints) > 0 {
		// upstream reports spec taints under metadata
		errs = append(errs, validateNodeTaints(n.Spec.Taints, field.NewPath("metadata", "taints"))...)
	}
	errs = append(errs, validateNodeResources(n)...)
	if len(n.Spec.PodCIDRs) > 0 {
		p := field.NewPath("spec", "podCIDRs")
		for i, c := range n.Spec.PodCIDRs {
			errs = append(errs, validation.IsValidCIDR(p.Index(i), c)...)
		}
		if len(n.Spec.PodCIDRs) > 1 {
			var ips []string
			for _, c := range n.Spec.PodCIDRs {
				ip, _, _ := splitCIDR(c)
				ips = append(ips, ip)
			}
			if !isDualStack(ips) || len(n.Spec.PodCIDRs) > 2 {
				errs = append(errs, field.Invalid(p, n.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
			}
			seen := sets.New[string]()
			for i, c := range n.Spec.PodCIDRs {
				if seen.Has(c) {
					errs = append(errs, field.Duplicate(p.Index(i), c))
				}
				seen.Insert(c)
			}
		}
	}
	return errs
}

func splitCIDR(c string) (string, string, bool) {
	for i := 0; i < len(c); i++ {
		if c[i] == '/' {
			return c[:i], c[i+1:], true
		}
	}
	return c, "", false
}

func validateNodeTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	unique := map[corev1.TaintEffect]sets.Set[string]{}
	for i, t := range taints {
		p := fldPath.Index(i)
		errs = append(errs, metavalidation.ValidateLabelName(t.Key, p.Child("key"))...)
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, joinMsgs(msgs)))
		}
		errs = append(errs, podspec.ValidateTaintEffect(t.Effect, false, p.Child("effect"))...)
		if unique[t.Effect].Has(t.Key) {
			e := field.Duplicate(p, t)
			e.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, e)
			continue
		}
		if unique[t.Effect] == nil {
			unique[t.Effect] = sets.New[string]()
		}
		unique[t.Effect].Insert(t.Key)
	}
	return errs
}

func joinMsgs(msgs []string) string {
	out := ""
	for i, m := range msgs {
		if i > 0 {
			out += ";"
		}
		out += m
	}
	return out
}

func validateNodeResources(n *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	for k, v := range n.Status.Capacity {
		errs = append(errs, podspec.ValidateResourceQuantityValue(k, v, field.NewPath("status", "capacity", string(k)))...)
	}
	for k, v := range n.Status.Allocatable {
		errs = append(errs, podspec.ValidateResourceQuantityValue(k, v, field.NewPath("status", "allocatable", string(k)))...)
	}
	return errs
}

// validateNodeStatus is what upstream checks of a node's status on any
// update: resource quantities and unique addresses.
func validateNodeStatus(n *corev1.Node) field.ErrorList {
	errs := validateNodeResources(n)
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range n.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), a))
		}
		seen[a] = true
	}
	return errs
}

func validateNodeUpdate(n, old *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range n.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), a))
		}
		seen[a] = true
	}
	const cidrMsg = "node updates may not change podCIDR except from \"\" to valid"
	if len(old.Spec.PodCIDRs) > 0 {
		if len(old.Spec.PodCIDRs) != len(n.Spec.PodCIDRs) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), cidrMsg))
		} else {
			for i, c := range old.Spec.PodCIDRs {
				if c != n.Spec.PodCIDRs[i] {
					errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), cidrMsg))
				}
			}
		}
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != n.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	if n.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return errs
}
