package flowcontrol

import (
	"context"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/shufflesharding"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/registry"
)

// Upstream's defaults for a limited priority level.
const (
	DefaultNominalConcurrencyShares int32 = 30
	DefaultHandSize                 int32 = 8
	DefaultQueues                   int32 = 64
	DefaultQueueLengthLimit         int32 = 50
)

// maxQueues bounds a priority level's queuing.queues.
const maxQueues int32 = 10 * 1000 * 1000

func priorityLevelConfigurations() registry.Resource {
	return registry.Resource{
		Kind:             flowcontrolv1.SchemeGroupVersion.WithKind("PriorityLevelConfiguration"),
		Plural:           "prioritylevelconfigurations",
		Singular:         "prioritylevelconfiguration",
		Subresources:     []string{"status"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { DefaultPriorityLevel(obj.(*flowcontrolv1.PriorityLevelConfiguration)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*flowcontrolv1.PriorityLevelConfiguration).Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validatePriorityLevel(obj.(*flowcontrolv1.PriorityLevelConfiguration))
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				return validatePriorityLevelStatus(&obj.(*flowcontrolv1.PriorityLevelConfiguration).Status)
			},
		},
	}
}

// DefaultPriorityLevel sets pl's unset fields to upstream's defaults.
func DefaultPriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = ptr.To(DefaultNominalConcurrencyShares)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = ptr.To[int32](0)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			if q.HandSize == 0 {
				q.HandSize = DefaultHandSize
			}
			if q.Queues == 0 {
				q.Queues = DefaultQueues
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = DefaultQueueLengthLimit
			}
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = ptr.To[int32](0)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = ptr.To[int32](0)
		}
	}
}

var (
	enablements    = []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}
	limitResponses = []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}
)

func validatePriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	var errs field.ErrorList
	// The v1beta3 round-trip annotation never belongs on a stored object.
	if _, ok := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; ok {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations"),
			fmt.Sprintf("annotation '%s' is forbidden", flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)))
	}
	spec := field.NewPath("spec")
	errs = append(errs, validatePriorityLevelSpec(pl.Name, &pl.Spec, spec)...)
	errs = append(errs, validateMandatoryPriorityLevel(pl, spec)...)
	return append(errs, validatePriorityLevelStatus(&pl.Status)...)
}

// validateMandatoryPriorityLevel keeps a mandatory priority level at its
// fixed spec; of exempt, only spec.exempt may change.
func validateMandatoryPriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration, path *field.Path) field.ErrorList {
	mandatory, ok := mandatoryPriorityLevels()[pl.Name]
	if !ok {
		return nil
	}
	if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
		have := pl.Spec.DeepCopy()
		have.Exempt = mandatory.Spec.Exempt
		if !equality.Semantic.DeepEqual(&mandatory.Spec, have) {
			return field.ErrorList{field.Invalid(path, pl.Spec, fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name))}
		}
		return nil
	}
	if !equality.Semantic.DeepEqual(pl.Spec, mandatory.Spec) {
		return field.ErrorList{field.Invalid(path, pl.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name))}
	}
	return nil
}

func validatePriorityLevelSpec(name string, spec *flowcontrolv1.PriorityLevelConfigurationSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(path.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(path.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := spec.Exempt; e != nil {
			exempt := path.Child("exempt")
			if e.NominalConcurrencyShares != nil && *e.NominalConcurrencyShares < 0 {
				errs = append(errs, field.Invalid(exempt.Child("nominalConcurrencyShares"), *e.NominalConcurrencyShares, "must be a non-negative integer"))
			}
			errs = append(errs, validateLendablePercent(e.LendablePercent, exempt)...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(path.Child("exempt"), "must be nil if the type is Limited"))
		}
		if spec.Limited == nil {
			errs = append(errs, field.Required(path.Child("limited"), "must not be empty when type is Limited"))
		} else {
			errs = append(errs, validateLimited(spec.Limited, path.Child("limited"))...)
		}
	case "":
		errs = append(errs, field.Required(path.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), spec.Type, enablements))
	}
	return errs
}

func validateLendablePercent(p *int32, path *field.Path) field.ErrorList {
	if p != nil && (*p < 0 || *p > 100) {
		return field.ErrorList{field.Invalid(path.Child("lendablePercent"), *p, "must be between 0 and 100, inclusive")}
	}
	return nil
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s := ptr.Deref(l.NominalConcurrencyShares, 0); s < 0 {
		errs = append(errs, field.Invalid(path.Child("nominalConcurrencyShares"), s, "must be a non-negative integer"))
	}
	errs = append(errs, validateLimitResponse(&l.LimitResponse, path.Child("limitResponse"))...)
	errs = append(errs, validateLendablePercent(l.LendablePercent, path)...)
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		errs = append(errs, field.Invalid(path.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	return errs
}

func validateLimitResponse(lr *flowcontrolv1.LimitResponse, path *field.Path) field.ErrorList {
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			return field.ErrorList{field.Forbidden(path.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited")}
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			return field.ErrorList{field.Required(path.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited")}
		}
		return validateQueuing(lr.Queuing, path.Child("queuing"))
	case "":
		return field.ErrorList{field.Required(path.Child("type"), "")}
	default:
		return field.ErrorList{field.NotSupported(path.Child("type"), lr.Type, limitResponses)}
	}
	return nil
}

// validateQueuing checks the queue sizes and that shuffle sharding can deal
// handSize of queues hands with the hash bits it has.
func validateQueuing(q *flowcontrolv1.QueuingConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(path.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	if q.Queues <= 0 {
		errs = append(errs, field.Invalid(path.Child("queues"), q.Queues, "must be positive"))
	} else if q.Queues > maxQueues {
		errs = append(errs, field.Invalid(path.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	handSize := path.Child("handSize")
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(handSize, q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(handSize, q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	case shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)) > shufflesharding.MaxHashBits:
		errs = append(errs, field.Invalid(handSize, q.HandSize, fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d",
			q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
	}
	return errs
}

func validatePriorityLevelStatus(status *flowcontrolv1.PriorityLevelConfigurationStatus) field.ErrorList {
	return validateConditionTypes(status.Conditions,
		func(c flowcontrolv1.PriorityLevelConfigurationCondition) flowcontrolv1.PriorityLevelConfigurationConditionType {
			return c.Type
		})
}
