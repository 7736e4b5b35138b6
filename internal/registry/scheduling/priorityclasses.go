package scheduling

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

const (
	// HighestUserDefinablePriority is the largest value a class not
	// reserved for the system may have.
	HighestUserDefinablePriority = int32(1000000000)
	// SystemCriticalPriority is the base of the built-in classes.
	SystemCriticalPriority = 2 * HighestUserDefinablePriority
	// SystemPriorityClassPrefix starts the reserved class names.
	SystemPriorityClassPrefix = "system-"
	// SystemClusterCritical and SystemNodeCritical are the built-in classes.
	SystemClusterCritical = SystemPriorityClassPrefix + "cluster-critical"
	SystemNodeCritical    = SystemPriorityClassPrefix + "node-critical"
)

// SystemPriorityClasses returns the classes the API server creates at
// start-up, as upstream does.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	mk := func(name string, value int32, desc string) *schedulingv1.PriorityClass {
		pc := &schedulingv1.PriorityClass{Value: value, Description: desc}
		pc.Name = name
		return pc
	}
	return []*schedulingv1.PriorityClass{
		mk(SystemNodeCritical, SystemCriticalPriority+1000, "Used for system critical pods that must not be moved from their current node."),
		mk(SystemClusterCritical, SystemCriticalPriority, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
	}
}

func priorityClasses() registry.Resource {
	return registry.Resource{
		Kind:       schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"),
		Plural:     "priorityclasses",
		Singular:   "priorityclass",
		ShortNames: []string{"pc"},
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				pc := obj.(*schedulingv1.PriorityClass)
				if pc.PreemptionPolicy == nil {
					p := corev1.PreemptLowerPriority
					pc.PreemptionPolicy = &p
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validatePriorityClass(obj.(*schedulingv1.PriorityClass))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				pc, o := obj.(*schedulingv1.PriorityClass), old.(*schedulingv1.PriorityClass)
				var errs field.ErrorList
				if pc.Value != o.Value {
					errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
				}
				return append(errs, apivalidation.ValidateImmutableField(pc.PreemptionPolicy, o.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
			},
		},
	}
}

func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, SystemPriorityClassPrefix) {
		if err := knownSystemClass(pc); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+SystemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > HighestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", HighestUserDefinablePriority)))
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
	}
	return errs
}

// knownSystemClass accepts pc only if it is one of the built-in classes,
// unchanged.
func knownSystemClass(pc *schedulingv1.PriorityClass) error {
	for _, sys := range SystemPriorityClasses() {
		if sys.Name != pc.Name {
			continue
		}
		if sys.Value != pc.Value {
			return fmt.Errorf("value of %v PriorityClass must be %v", sys.Name, sys.Value)
		}
		if sys.GlobalDefault != pc.GlobalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", sys.Name, sys.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", pc.Name)
}
