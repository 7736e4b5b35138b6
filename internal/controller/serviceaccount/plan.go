package serviceaccount

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// State is what one look at a namespace sees: the namespace, the
// ServiceAccount names every namespace should have, and those of them it
// has.
type State struct {
	Namespace  *corev1.Namespace
	Want, Have []string
}

// Plan is the ServiceAccounts to create.
type Plan struct {
	Create []string
}

// plan creates, in an active namespace, each wanted ServiceAccount it
// lacks; nothing in a namespace that is terminating or being deleted.
func plan(st State) Plan {
	ns := st.Namespace
	if ns == nil || ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
		return Plan{}
	}
	var p Plan
	for _, name := range st.Want {
		if !slices.Contains(st.Have, name) && !slices.Contains(p.Create, name) {
			p.Create = append(p.Create, name)
		}
	}
	return p
}
