package core

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// standardFinalizers are the unqualified finalizer names core objects accept.
var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true,
	metav1.FinalizerOrphanDependents:   true,
	metav1.FinalizerDeleteDependents:   true,
}

// validateKubeFinalizerName rejects an unqualified finalizer that is not one
// of Kubernetes' own, as upstream does for every core/v1 object.
func validateKubeFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if !strings.Contains(name, "/") && !standardFinalizers[name] {
		return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}

// validated wraps a resource's Validate with the metadata rule upstream adds
// for every core/v1 object (finalizer names), which the generic ObjectMeta
// validation does not know.
func validated(fn func(runtime.Object) field.ErrorList) func(runtime.Object) field.ErrorList {
	return func(obj runtime.Object) field.ErrorList {
		var errs field.ErrorList
		if m, err := meta.Accessor(obj); err == nil {
			p := field.NewPath("metadata", "finalizers")
			for i, f := range m.GetFinalizers() {
				errs = append(errs, validateKubeFinalizerName(f, p.Index(i))...)
			}
		}
		if fn != nil {
			errs = append(errs, fn(obj)...)
		}
		return errs
	}
}

func validateDNS1123Label(v string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(fldPath, v, msg))
	}
	return errs
}

func validateDNS1123Subdomain(v string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(v) {
		errs = append(errs, field.Invalid(fldPath, v, msg))
	}
	return errs
}

func validateQualifiedName(v string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(v) {
		errs = append(errs, field.Invalid(fldPath, v, msg))
	}
	return errs
}

func validateNameWith(fn apivalidation.ValidateNameFunc, v string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range fn(v, false) {
		errs = append(errs, field.Invalid(fldPath, v, msg))
	}
	return errs
}

func nonNegative(v int64, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(v, fldPath)
}

func immutable(newVal, oldVal any, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateImmutableField(newVal, oldVal, fldPath)
}

// validateNonSpecialIP rejects addresses that make no sense as a service or
// endpoint address: unspecified, loopback, link-local.
func validateNonSpecialIP(s string, fldPath *field.Path) field.ErrorList {
	ip := net.ParseIP(s)
	if ip == nil {
		return field.ErrorList{field.Invalid(fldPath, s, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(fldPath, s, fmt.Sprintf("may not be unspecified (%v)", s)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(fldPath, s, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(fldPath, s, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(fldPath, s, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func isIPv6String(s string) bool {
	ip := net.ParseIP(s)
	return ip != nil && ip.To4() == nil
}

// isDualStack reports whether ips hold at least one IPv4 and one IPv6 address.
func isDualStack(ips []string) bool {
	v4, v6 := false, false
	for _, s := range ips {
		if isIPv6String(s) {
			v6 = true
		} else {
			v4 = true
		}
	}
	return v4 && v6
}
