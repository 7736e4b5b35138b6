package batch

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func cronJobs() registry.Resource {
	return registry.Resource{
		Kind:             batchv1.SchemeGroupVersion.WithKind("CronJob"),
		Plural:           "cronjobs",
		Singular:         "cronjob",
		ShortNames:       []string{"cj"},
		Categories:       []string{"all"},
		Namespaced:       true,
		Subresources:     []string{"status"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultCronJob(obj.(*batchv1.CronJob)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				cj := obj.(*batchv1.CronJob)
				cj.Status = batchv1.CronJobStatus{}
				cj.Spec.JobTemplate.Spec.Scheduling = nil // alpha upstream, off by default
			},
			ValidateName: validateCronJobName,
			// Validate runs on create and update. Upstream also relaxes a few
			// rules on update (TZ= in an old schedule, the 52-character name
			// limit); objects created here never need that.
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateCronJobSpec(&obj.(*batchv1.CronJob).Spec, nil, field.NewPath("spec"))
			},
		},
	}
}

// validateCronJobName is a DNS subdomain of at most 52 characters: the
// controller appends an 11-character "-<timestamp>" to make job names,
// which must fit in 63.
func validateCronJobName(name string, prefix bool) []string {
	msgs := apivalidation.NameIsDNSSubdomain(name, prefix)
	if max := validation.DNS1035LabelMaxLength - 11; len(name) > max {
		msgs = append(msgs, content.MaxLenError(max))
	}
	return msgs
}

// defaultCronJob applies upstream's batch/v1 CronJob defaults. The job
// template's JobSpec gets no job defaults (upstream defaults only its pod
// template); they are applied when the controller creates each Job.
func defaultCronJob(cj *batchv1.CronJob) {
	s := &cj.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if s.Suspend == nil {
		s.Suspend = ptr(false)
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = ptr(int32(3))
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = ptr(int32(1))
	}
	podspec.DefaultPodTemplateSpec(&s.JobTemplate.Spec.Template)
}

func validateCronJobSpec(spec, oldSpec *batchv1.CronJobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	sp := p.Child("schedule")
	if spec.Schedule == "" {
		errs = append(errs, field.Required(sp, ""))
	} else {
		allowTZ := oldSpec != nil && strings.Contains(oldSpec.Schedule, "TZ")
		if err := parseCronSchedule(spec.Schedule); err != nil {
			errs = append(errs, field.Invalid(sp, spec.Schedule, err.Error()))
		}
		switch {
		case allowTZ && strings.Contains(spec.Schedule, "TZ") && spec.TimeZone != nil:
			errs = append(errs, field.Invalid(sp, spec.Schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
		case !allowTZ && strings.Contains(spec.Schedule, "TZ"):
			errs = append(errs, field.Invalid(sp, spec.Schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
		}
	}
	if spec.StartingDeadlineSeconds != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*spec.StartingDeadlineSeconds, p.Child("startingDeadlineSeconds"))...)
	}
	if oldSpec == nil || ptrValue(oldSpec.TimeZone) != ptrValue(spec.TimeZone) || (oldSpec.TimeZone == nil) != (spec.TimeZone == nil) {
		errs = append(errs, validateTimeZone(spec.TimeZone, p.Child("timeZone"))...)
	}
	cp := p.Child("concurrencyPolicy")
	switch spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(cp, ""))
	default:
		errs = append(errs, field.NotSupported(cp, spec.ConcurrencyPolicy, []batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}

	// The job template: a job spec whose selector is always generated.
	jp := p.Child("jobTemplate", "spec")
	js := &spec.JobTemplate.Spec
	errs = append(errs, validateJobSpec(js, jp)...)
	if js.Selector != nil {
		errs = append(errs, field.Invalid(jp.Child("selector"), js.Selector, "`selector` will be auto-generated"))
	}
	if ptrValue(js.ManualSelector) {
		errs = append(errs, field.NotSupported(jp.Child("manualSelector"), js.ManualSelector, []string{"nil", "false"}))
	}

	if spec.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.SuccessfulJobsHistoryLimit), p.Child("successfulJobsHistoryLimit"))...)
	}
	if spec.FailedJobsHistoryLimit != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.FailedJobsHistoryLimit), p.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

// Time zone names as the IANA database spells them (plus the digits and
// '+' of some legacy names).
var timeZoneComponent = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

func validateTimeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZoneComponent.MatchString(part) {
			return field.ErrorList{field.Invalid(p, tz, fmt.Sprintf("unknown time zone %s", *tz))}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(p, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(p, tz, err.Error()))
	}
	return errs
}
