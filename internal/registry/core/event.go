package core

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func events() registry.Resource {
	return registry.Resource{
		Kind:       corev1.SchemeGroupVersion.WithKind("Event"),
		Plural:     "events",
		Singular:   "event",
		ShortNames: []string{"ev"},
		Namespaced: true,
		Strategy: registry.Strategy{
			// Through core/v1 upstream applies only its legacy event rules,
			// on create and update alike.
			Validate: validated(func(obj runtime.Object) field.ErrorList { return ValidateEvent(obj.(*corev1.Event)) }),
			SelectableFields: func(obj runtime.Object) fields.Set {
				e := obj.(*corev1.Event)
				// An event written through events.k8s.io has no
				// source.component: its reporting controller stands in.
				source := e.Source.Component
				if source == "" {
					source = e.ReportingController
				}
				return fields.Set{
					"involvedObject.kind":            e.InvolvedObject.Kind,
					"involvedObject.namespace":       e.InvolvedObject.Namespace,
					"involvedObject.name":            e.InvolvedObject.Name,
					"involvedObject.uid":             string(e.InvolvedObject.UID),
					"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
					"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
					"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
					"reason":                         e.Reason,
					"reportingComponent":             e.ReportingController,
					"source":                         source,
					"type":                           e.Type,
				}
			},
		},
	}
}

// ValidateEvent applies upstream's legacy event validation, the rules every
// event passes whichever API wrote it: the involved object's namespace
// matches the event's, and events with an eventTime carry the reporting
// fields of the newer API.
func ValidateEvent(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	const mismatch = "does not match event.namespace"
	if e.EventTime.Time.IsZero() {
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, mismatch))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, mismatch))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, mismatch))
		}
		if e.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
		}
		errs = append(errs, validateQualifiedName(e.ReportingController, field.NewPath("reportingController"))...)
		limit := func(v string, max int, name string) {
			if v == "" {
				errs = append(errs, field.Required(field.NewPath(name), ""))
			}
			if len(v) > max {
				errs = append(errs, field.Invalid(field.NewPath(name), "", fmt.Sprintf("can have at most %v characters", max)))
			}
		}
		limit(e.ReportingInstance, 128, "reportingInstance")
		limit(e.Action, 128, "action")
		limit(e.Reason, 128, "reason")
		if len(e.Message) > 1024 {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", "can have at most 1024 characters"))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	return errs
}
