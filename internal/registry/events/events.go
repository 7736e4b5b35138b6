package events

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

func events() registry.Resource {
	return registry.Resource{
		Kind:   eventsv1.SchemeGroupVersion.WithKind("Event"),
		Plural: "events",
		StoredAs: &registry.StoredAs{
			Kind: corev1.SchemeGroupVersion.WithKind("Event"), Plural: "events",
			ToStorage: toCore, FromStorage: fromCore,
		},
		Singular:   "event",
		ShortNames: []string{"ev"},
		Namespaced: true,
		Strategy: registry.Strategy{
			Validate: func(obj runtime.Object) field.ErrorList { return validateEvent(obj.(*eventsv1.Event)) },
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateEventUpdate(obj.(*eventsv1.Event), old.(*eventsv1.Event))
			},
			SelectableFields: func(obj runtime.Object) fields.Set { return selectableFields(obj.(*eventsv1.Event)) },
		},
	}
}

// selectableFields are the events.k8s.io/v1 names of the fields upstream
// lets a field selector use on events.
func selectableFields(e *eventsv1.Event) fields.Set {
	source := e.DeprecatedSource.Component
	if source == "" {
		source = e.ReportingController
	}
	return fields.Set{
		"regarding.kind":            e.Regarding.Kind,
		"regarding.namespace":       e.Regarding.Namespace,
		"regarding.name":            e.Regarding.Name,
		"regarding.uid":             string(e.Regarding.UID),
		"regarding.apiVersion":      e.Regarding.APIVersion,
		"regarding.resourceVersion": e.Regarding.ResourceVersion,
		"regarding.fieldPath":       e.Regarding.FieldPath,
		"reason":                    e.Reason,
		"reportingController":       e.ReportingController,
		"source":                    source,
		"type":                      e.Type,
	}
}

// validateEvent is upstream's validation of an event written through
// events.k8s.io/v1: the rules every event passes plus the strict ones.
func validateEvent(e *eventsv1.Event) field.ErrorList {
	errs := validateAnyEvent(e)
	errs = append(errs, validateSeries(e)...)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	if !e.DeprecatedFirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !e.DeprecatedLastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if e.DeprecatedCount != 0 {
		errs = append(errs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return errs
}

func validateSeries(e *eventsv1.Event) field.ErrorList {
	if e.Series == nil {
		return nil
	}
	var errs field.ErrorList
	if e.Series.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if e.Series.LastObservedTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return errs
}

// validateAnyEvent holds the rules upstream applies to every event, core
// or events.k8s.io.
func validateAnyEvent(e *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		// An old-style event: its namespace must be its object's.
		if e.Regarding.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, e.Regarding.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.Regarding.Namespace {
			errs = append(errs, field.Invalid(nsPath, e.Regarding.Namespace, "does not match event.namespace"))
		}
	} else {
		if e.Regarding.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(nsPath, e.Regarding.Namespace, "does not match event.namespace"))
		}
		if e.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
		}
		for _, msg := range validation.IsQualifiedName(e.ReportingController) {
			errs = append(errs, field.Invalid(field.NewPath("reportingController"), e.ReportingController, msg))
		}
		errs = append(errs, requiredAndShort("reportingInstance", e.ReportingInstance, reportingInstanceLengthLimit)...)
		errs = append(errs, requiredAndShort("action", e.Action, actionLengthLimit)...)
		errs = append(errs, requiredAndShort("reason", e.Reason, reasonLengthLimit)...)
		if len(e.Note) > noteLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	return errs
}

func requiredAndShort(name, v string, limit int) field.ErrorList {
	var errs field.ErrorList
	if v == "" {
		errs = append(errs, field.Required(field.NewPath(name), ""))
	}
	if len(v) > limit {
		errs = append(errs, field.Invalid(field.NewPath(name), "", fmt.Sprintf("can have at most %v characters", limit)))
	}
	return errs
}

// validateEventUpdate: once written, an event changes only its series.
func validateEventUpdate(e, old *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	immutable := func(newV, oldV any, name string) {
		errs = append(errs, apivalidation.ValidateImmutableField(newV, oldV, field.NewPath(name))...)
	}
	immutable(e.Regarding, old.Regarding, "involvedObject")
	immutable(e.Reason, old.Reason, "reason")
	immutable(e.Note, old.Note, "message")
	immutable(e.DeprecatedSource, old.DeprecatedSource, "source")
	immutable(e.DeprecatedFirstTimestamp, old.DeprecatedFirstTimestamp, "firstTimestamp")
	immutable(e.DeprecatedLastTimestamp, old.DeprecatedLastTimestamp, "lastTimestamp")
	immutable(e.DeprecatedCount, old.DeprecatedCount, "count")
	immutable(e.Type, old.Type, "type")
	immutable(e.EventTime, old.EventTime, "eventTime")
	immutable(e.Action, old.Action, "action")
	immutable(e.Related, old.Related, "related")
	immutable(e.ReportingController, old.ReportingController, "reportingController")
	immutable(e.ReportingInstance, old.ReportingInstance, "reportingInstance")
	return errs
}
