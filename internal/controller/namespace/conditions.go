package namespace

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// conditionTypes are the namespace conditions this controller maintains.
var conditionTypes = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// The reason and message of each condition when nothing went wrong.
var (
	okReasons = map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "ResourcesDiscovered",
		corev1.NamespaceDeletionGVParsingFailure: "ParsedGroupVersions",
		corev1.NamespaceDeletionContentFailure:   "ContentDeleted",
		corev1.NamespaceContentRemaining:         "ContentRemoved",
		corev1.NamespaceFinalizersRemaining:      "ContentHasNoFinalizers",
	}
	okMessages = map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "All legacy kube types successfully parsed",
		corev1.NamespaceDeletionContentFailure:   "All content successfully deleted, may be waiting on finalization",
		corev1.NamespaceContentRemaining:         "All content successfully removed",
		corev1.NamespaceFinalizersRemaining:      "All content-preserving finalizers finished",
	}
)

// contentTotals is what remained in a namespace after a deletion pass.
type contentTotals struct {
	remainingByResource  map[schema.GroupVersionResource]int
	remainingByFinalizer map[string]int
}

// conditionUpdater collects what went wrong in one deletion pass and turns
// it into status conditions.
type conditionUpdater struct {
	now           metav1.Time
	newConditions []corev1.NamespaceCondition
	contentErrors []error
}

func (u *conditionUpdater) failure(t corev1.NamespaceConditionType, reason, msg string) {
	u.newConditions = append(u.newConditions, corev1.NamespaceCondition{
		Type: t, Status: corev1.ConditionTrue, LastTransitionTime: u.now, Reason: reason, Message: msg})
}

// discoveryErr records a failure to discover resources.
func (u *conditionUpdater) discoveryErr(err error) {
	msg := err.Error()
	if derr, ok := err.(*discovery.ErrGroupDiscoveryFailed); ok {
		msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(derr.Groups), err)
	}
	u.failure(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
}

// groupVersionErr records a discovered group/version that does not parse.
func (u *conditionUpdater) groupVersionErr(err error) {
	u.failure(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", err.Error())
}

// contentErr records a failure to delete one resource's content.
func (u *conditionUpdater) contentErr(err error) {
	u.contentErrors = append(u.contentErrors, err)
}

// contentTotals records what remains.
func (u *conditionUpdater) contentTotals(t contentTotals) {
	if len(t.remainingByResource) > 0 {
		var parts []string
		for gvr, n := range t.remainingByResource {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
			}
		}
		sort.Strings(parts)
		u.failure(corev1.NamespaceContentRemaining, "SomeResourcesRemain",
			fmt.Sprintf("Some resources are remaining: %s", strings.Join(parts, ", ")))
	}
	if len(t.remainingByFinalizer) > 0 {
		var parts []string
		for f, n := range t.remainingByFinalizer {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
			}
		}
		sort.Strings(parts)
		u.failure(corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain",
			fmt.Sprintf("Some content in the namespace has finalizers remaining: %s", strings.Join(parts, ", ")))
	}
}

// update writes the pass's conditions into status (every maintained type:
// the failure recorded, or its "ok" form) and reports whether it changed.
func (u *conditionUpdater) update(status *corev1.NamespaceStatus) bool {
	conds := slices.Clone(u.newConditions)
	if getCondition(conds, corev1.NamespaceDeletionContentFailure) == nil && len(u.contentErrors) > 0 {
		msgs := make([]string, 0, len(u.contentErrors))
		for _, e := range u.contentErrors {
			msgs = append(msgs, e.Error())
		}
		sort.Strings(msgs)
		conds = append(conds, corev1.NamespaceCondition{
			Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionTrue, LastTransitionTime: u.now,
			Reason:  "ContentDeletionFailed",
			Message: fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(u.contentErrors), strings.Join(msgs, ", ")),
		})
	}
	changed := false
	for _, t := range conditionTypes {
		want := getCondition(conds, t)
		if want == nil {
			want = &corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, LastTransitionTime: u.now,
				Reason: okReasons[t], Message: okMessages[t]}
		}
		old := getCondition(status.Conditions, t)
		switch {
		case old == nil:
			status.Conditions = append(status.Conditions, *want)
			changed = true
		case old.Status != want.Status || old.Reason != want.Reason || old.Message != want.Message:
			if old.Status != want.Status {
				old.LastTransitionTime = u.now
			}
			old.Status, old.Reason, old.Message = want.Status, want.Reason, want.Message
			changed = true
		}
	}
	return changed
}

func getCondition(conds []corev1.NamespaceCondition, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
