package quota

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Add is a + b, per resource.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range a {
		out[k] = v.DeepCopy()
	}
	for k, v := range b {
		if q, ok := out[k]; ok {
			q.Add(v)
			out[k] = q
		} else {
			out[k] = v.DeepCopy()
		}
	}
	return out
}

// Subtract is a - b, per resource (b's resources missing from a count from
// zero).
func Subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range a {
		out[k] = v.DeepCopy()
	}
	for k, v := range b {
		q, ok := out[k]
		if !ok {
			q = *resource.NewQuantity(0, v.Format)
		}
		q.Sub(v)
		out[k] = q
	}
	return out
}

// SubtractNonNegative is a - b with every negative result zero.
func SubtractNonNegative(a, b corev1.ResourceList) corev1.ResourceList {
	out := Subtract(a, b)
	for k, v := range out {
		if v.Sign() < 0 {
			out[k] = *resource.NewQuantity(0, v.Format)
		}
	}
	return out
}

// Mask is the part of list named in names.
func Mask(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if v, ok := list[n]; ok {
			out[n] = v.DeepCopy()
		}
	}
	return out
}

// LessThanOrEqual reports whether a[k] <= b[k] for every k in both, and
// the names where it is not.
func LessThanOrEqual(a, b corev1.ResourceList) (bool, []corev1.ResourceName) {
	var exceeded []corev1.ResourceName
	for k, v := range a {
		if limit, ok := b[k]; ok && v.Cmp(limit) > 0 {
			exceeded = append(exceeded, k)
		}
	}
	return len(exceeded) == 0, exceeded
}

// Negative lists the resources with a value below zero.
func Negative(list corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for k, v := range list {
		if v.Sign() < 0 {
			out = append(out, k)
		}
	}
	return out
}

// RemoveZeros is list without its zero values.
func RemoveZeros(list corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range list {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

// Names are the resource names of list.
func Names(list corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(list))
	for k := range list {
		out = append(out, k)
	}
	return out
}

// Equal reports whether a and b hold the same resources with equal values.
func Equal(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// String is list as upstream prints it in quota messages: name=value,
// sorted by name, joined by commas ("pods=1,requests.cpu=500m").
func String(list corev1.ResourceList) string {
	keys := make([]string, 0, len(list))
	for k := range list {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := list[corev1.ResourceName(k)]
		parts[i] = k + "=" + v.String()
	}
	return strings.Join(parts, ",")
}

// NamesString is names sorted and joined by commas.
func NamesString(names []corev1.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func intersect(names, known []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, n := range names {
		for _, k := range known {
			if n == k {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

func one() resource.Quantity { return *resource.NewQuantity(1, resource.DecimalSI) }
