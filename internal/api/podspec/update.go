package podspec

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The fields a pod update may change, as upstream lists them in its error.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// ValidatePodSpecUpdate checks that an update of a pod's spec (through the
// main resource) changes only what upstream allows: container and init
// container images, activeDeadlineSeconds (set, or lowered), tolerations
// (additions, and tolerationSeconds of existing ones), scheduling gates
// (removals), terminationGracePeriodSeconds from negative to 1, and for a
// pod still gated, additions to nodeSelector and node affinity. Anything
// else yields upstream's "pod updates may not change fields other than …"
// Forbidden error with a diff. It does not validate the new spec itself
// (see ValidatePodUpdate).
func ValidatePodSpecUpdate(newSpec, oldSpec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	errs, stop := validateContainerUpdates(newSpec.Containers, oldSpec.Containers, fldPath.Child("containers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}
	errs, stop = validateContainerUpdates(newSpec.InitContainers, oldSpec.InitContainers, fldPath.Child("initContainers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}

	adsPath := fldPath.Child("activeDeadlineSeconds")
	if newSpec.ActiveDeadlineSeconds != nil {
		n := *newSpec.ActiveDeadlineSeconds
		if n < 0 || n > math.MaxInt32 {
			return append(allErrs, field.Invalid(adsPath, n, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if oldSpec.ActiveDeadlineSeconds != nil && *oldSpec.ActiveDeadlineSeconds < n {
			return append(allErrs, field.Invalid(adsPath, n, "must be less than or equal to previous value"))
		}
	} else if oldSpec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Invalid(adsPath, newSpec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}

	allErrs = append(allErrs, validateOnlyAddedTolerations(newSpec.Tolerations, oldSpec.Tolerations, fldPath.Child("tolerations"))...)
	allErrs = append(allErrs, validateOnlyDeletedSchedulingGates(newSpec.SchedulingGates, oldSpec.SchedulingGates, fldPath.Child("schedulingGates"))...)

	if equality.Semantic.DeepEqual(newSpec, oldSpec) {
		return allErrs
	}

	// Overwrite the updatable fields with their old values; whatever still
	// differs is a forbidden change.
	munged := newSpec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldSpec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldSpec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = nil
	if oldSpec.ActiveDeadlineSeconds != nil {
		v := *oldSpec.ActiveDeadlineSeconds
		munged.ActiveDeadlineSeconds = &v
	}
	munged.SchedulingGates = oldSpec.SchedulingGates
	munged.Tolerations = oldSpec.Tolerations
	if oldSpec.TerminationGracePeriodSeconds != nil && *oldSpec.TerminationGracePeriodSeconds < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = oldSpec.TerminationGracePeriodSeconds
	}

	if len(oldSpec.SchedulingGates) > 0 {
		// A gated pod may gain node selector entries and node affinity terms.
		if !equality.Semantic.DeepEqual(munged.NodeSelector, oldSpec.NodeSelector) {
			for k, v := range oldSpec.NodeSelector {
				if nv, ok := munged.NodeSelector[k]; !ok || nv != v {
					allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeSelector"), munged.NodeSelector,
						"only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
					break
				}
			}
			munged.NodeSelector = oldSpec.NodeSelector
		}
		var oldNA, newNA *corev1.NodeAffinity
		if oldSpec.Affinity != nil {
			oldNA = oldSpec.Affinity.NodeAffinity
		}
		if munged.Affinity != nil {
			newNA = munged.Affinity.NodeAffinity
		}
		if !equality.Semantic.DeepEqual(oldNA, newNA) {
			allErrs = append(allErrs, validateNodeAffinityMutation(fldPath.Child("affinity", "nodeAffinity"), newNA, oldNA)...)
			switch {
			case munged.Affinity == nil && oldNA == nil:
			case munged.Affinity == nil:
				munged.Affinity = &corev1.Affinity{NodeAffinity: oldNA}
			case oldSpec.Affinity == nil && munged.Affinity.PodAffinity == nil && munged.Affinity.PodAntiAffinity == nil:
				munged.Affinity = nil
			default:
				munged.Affinity.NodeAffinity = oldNA
			}
		}
	}

	if !equality.Semantic.DeepEqual(munged, oldSpec) {
		diff := cmp.Diff(*oldSpec, *munged)
		allErrs = append(allErrs, field.Forbidden(fldPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v",
			strings.Join(updatablePodSpecFields, ","), diff)))
	}
	return allErrs
}

func validateContainerUpdates(newC, oldC []corev1.Container, fldPath *field.Path) (field.ErrorList, bool) {
	if len(newC) != len(oldC) {
		return field.ErrorList{field.Forbidden(fldPath, "pod updates may not add or remove containers")}, true
	}
	var allErrs field.ErrorList
	for i, c := range newC {
		if c.Image == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("image"), ""))
		}
		if len(strings.TrimSpace(c.Image)) != len(c.Image) {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return allErrs, false
}

func validateOnlyAddedTolerations(newT, oldT []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, old := range oldT {
		found := false
		for _, n := range newT {
			o := old
			o.TolerationSeconds = n.TolerationSeconds
			if reflect.DeepEqual(o, n) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return ValidateTolerations(newT, fldPath)
}

func validateOnlyDeletedSchedulingGates(newG, oldG []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	if len(newG) == 0 {
		return nil
	}
	added := map[string]int{}
	for i, g := range newG {
		added[g.Name] = i
	}
	for _, g := range oldG {
		delete(added, g.Name)
	}
	var allErrs field.ErrorList
	for i, g := range newG {
		if _, ok := added[g.Name]; ok {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return allErrs
}

func validateNodeAffinityMutation(p *field.Path, newNA, oldNA *corev1.NodeAffinity) field.ErrorList {
	if oldNA == nil || oldNA.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	oldTerms := oldNA.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	var newTerms []corev1.NodeSelectorTerm
	if newNA != nil && newNA.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		newTerms = newNA.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	tp := p.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	if len(oldTerms) > 0 && len(oldTerms) != len(newTerms) {
		return field.ErrorList{field.Invalid(tp, newTerms, "no additions/deletions to non-empty NodeSelectorTerms list are allowed")}
	}
	var allErrs field.ErrorList
	for i := range oldTerms {
		if !termOnlyAdds(newTerms[i], oldTerms[i]) {
			allErrs = append(allErrs, field.Invalid(tp.Index(i), newTerms[i], "only additions are allowed (no mutations or deletions)"))
		}
	}
	return allErrs
}

func termOnlyAdds(n, o corev1.NodeSelectorTerm) bool {
	if len(o.MatchExpressions) == 0 && len(o.MatchFields) == 0 && (len(n.MatchExpressions) > 0 || len(n.MatchFields) > 0) {
		return false
	}
	if l := len(o.MatchExpressions); l > 0 && (len(n.MatchExpressions) < l || !equality.Semantic.DeepEqual(n.MatchExpressions[:l], o.MatchExpressions)) {
		return false
	}
	if l := len(o.MatchFields); l > 0 && (len(n.MatchFields) < l || !equality.Semantic.DeepEqual(n.MatchFields[:l], o.MatchFields)) {
		return false
	}
	return true
}

// ValidatePodEphemeralContainersUpdate checks an update through the
// pods/ephemeralcontainers subresource: the new pod is valid, and existing
// ephemeral containers are neither removed nor changed.
func ValidatePodEphemeralContainersUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	allErrs := ValidatePod(newPod)
	if _, ok := oldPod.Annotations[mirrorPodAnnotation]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	specPath := field.NewPath("spec", "ephemeralContainers")
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range newPod.Spec.EphemeralContainers {
		byName[newPod.Spec.EphemeralContainers[i].Name] = &newPod.Spec.EphemeralContainers[i]
	}
	for _, old := range oldPod.Spec.EphemeralContainers {
		n, ok := byName[old.Name]
		if !ok {
			allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", old.Name)))
		} else if !equality.Semantic.DeepEqual(old, *n) {
			allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", old.Name, cmp.Diff(old, *n))))
		}
	}
	return allErrs
}
