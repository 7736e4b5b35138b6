package storageapi

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/nodeutil"
)

// nodeSelectorWarnings name the deprecated node labels a selector uses,
// as upstream warns of them.
func nodeSelectorWarnings(sel *metav1.LabelSelector, p *field.Path) []string {
	if sel == nil {
		return nil
	}
	var out []string
	for i, e := range sel.MatchExpressions {
		if msg, ok := nodeutil.DeprecatedLabelMessage(e.Key); ok {
			out = append(out, fmt.Sprintf("%s: %s is %s", p.Child("matchExpressions").Index(i).Child("key"), e.Key, msg))
		}
	}
	for label := range sel.MatchLabels {
		if msg, ok := nodeutil.DeprecatedLabelMessage(label); ok {
			out = append(out, fmt.Sprintf("%s: %s", p.Child("matchLabels").Child(label), msg))
		}
	}
	return out
}

// topologyWarnings name the deprecated node labels a class's allowed
// topologies use.
func topologyWarnings(terms []corev1.TopologySelectorTerm) []string {
	var out []string
	for i, term := range terms {
		for j, e := range term.MatchLabelExpressions {
			if msg, ok := nodeutil.DeprecatedLabelMessage(e.Key); ok {
				out = append(out, fmt.Sprintf("%s: %s", field.NewPath("allowedTopologies").Index(i).Child("matchLabelExpressions").Index(j).Child("key"), msg))
			}
		}
	}
	return out
}
