package batch

import (
	"context"
	"fmt"
	"math"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

// The unprefixed labels the job controller has always put on its pods;
// upstream keeps setting them next to the batch.kubernetes.io/ ones.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

func jobs() registry.Resource {
	return registry.Resource{
		Kind:             batchv1.SchemeGroupVersion.WithKind("Job"),
		Plural:           "jobs",
		Singular:         "job",
		Categories:       []string{"all"},
		Namespaced:       true,
		Subresources:     []string{"status"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default:          func(obj runtime.Object) { defaultJob(obj.(*batchv1.Job)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) { prepareJobForCreate(obj.(*batchv1.Job)) },
			Validate:         func(obj runtime.Object) field.ErrorList { return validateJob(obj.(*batchv1.Job)) },
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateJobUpdate(obj.(*batchv1.Job), old.(*batchv1.Job))
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateJobStatusUpdate(obj.(*batchv1.Job), old.(*batchv1.Job))
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// defaultJob applies upstream's batch/v1 Job defaults.
func defaultJob(j *batchv1.Job) {
	s := &j.Spec
	// A non-parallel job may leave both unset; both then default to 1.
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptr(int32(1))
		s.Parallelism = ptr(int32(1))
	}
	if s.Parallelism == nil {
		s.Parallelism = ptr(int32(1))
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = ptr(int32(math.MaxInt32))
		} else {
			s.BackoffLimit = ptr(int32(6))
		}
	}
	// The job takes its template's labels when it has none of its own.
	// Like upstream this shares the map, so the labels generated on create
	// land on both.
	if s.Template.Labels != nil && len(j.Labels) == 0 {
		j.Labels = s.Template.Labels
	}
	if s.CompletionMode == nil {
		s.CompletionMode = ptr(batchv1.NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptr(false)
	}
	if s.PodFailurePolicy != nil {
		for _, rule := range s.PodFailurePolicy.Rules {
			for i := range rule.OnPodConditions {
				if rule.OnPodConditions[i].Status == "" {
					rule.OnPodConditions[i].Status = corev1.ConditionTrue
				}
			}
		}
	}
	if s.PodReplacementPolicy == nil {
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = ptr(batchv1.Failed)
		} else {
			s.PodReplacementPolicy = ptr(batchv1.TerminatingOrFailed)
		}
	}
	if s.ManualSelector == nil {
		s.ManualSelector = ptr(false)
	}
	podspec.DefaultPodTemplateSpec(&s.Template)
}

func prepareJobForCreate(j *batchv1.Job) {
	if j.Spec.ManualSelector == nil || !*j.Spec.ManualSelector {
		generateJobSelector(j)
	}
	j.Status = batchv1.JobStatus{}
	// Workload-aware scheduling is alpha upstream (WorkloadWithJob), off
	// by default: the field is dropped.
	j.Spec.Scheduling = nil
	// Upstream stores the job before its labels are filled from the
	// template's generated ones, but re-applies the defaults whenever it
	// reads the object back, so clients always see them. Do it once here.
	if len(j.Labels) == 0 && len(j.Spec.Template.Labels) > 0 {
		j.Labels = make(map[string]string, len(j.Spec.Template.Labels))
		for k, v := range j.Spec.Template.Labels {
			j.Labels[k] = v
		}
	}
}

// generateJobSelector labels the pod template with the job's name and uid
// and selects on the uid, so the job's pods belong to it alone. Labels the
// user already set are kept; validation rejects conflicting ones.
func generateJobSelector(j *batchv1.Job) {
	t := &j.Spec.Template
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	for _, k := range []string{legacyJobNameLabel, batchv1.JobNameLabel} {
		if _, ok := t.Labels[k]; !ok {
			t.Labels[k] = j.Name
		}
	}
	for _, k := range []string{legacyControllerUIDLabel, batchv1.ControllerUidLabel} {
		if _, ok := t.Labels[k]; !ok {
			t.Labels[k] = string(j.UID)
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

func validateJob(j *batchv1.Job) field.ErrorList {
	errs := validateGeneratedSelector(j)
	errs = append(errs, validateJobSpecWithSelector(&j.Spec, field.NewPath("spec"))...)
	if ptrValue(j.Spec.CompletionMode) == batchv1.IndexedCompletion && j.Spec.Completions != nil && *j.Spec.Completions > 0 {
		// Indexed pods get hostname "<job>-<index>": that must be a DNS label.
		host := fmt.Sprintf("%s-%d", j.Name, *j.Spec.Completions-1)
		if len(validation.IsDNS1123Label(host)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), j.Name, "will not able to create pod with invalid DNS label: "+host))
		}
	}
	return errs
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// validateGeneratedSelector checks that a generated selector and the
// template labels are those generation produces for this job.
func validateGeneratedSelector(j *batchv1.Job) field.ErrorList {
	if ptrValue(j.Spec.ManualSelector) || j.Spec.Selector == nil {
		return nil
	}
	var errs field.ErrorList
	if j.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	mp := field.NewPath("spec", "template", "metadata")
	uid := string(j.UID)
	errs = append(errs, hasLabel(&j.Spec.Template.ObjectMeta, mp, legacyControllerUIDLabel, uid)...)
	errs = append(errs, hasLabel(&j.Spec.Template.ObjectMeta, mp, legacyJobNameLabel, j.Name)...)
	errs = append(errs, hasLabel(&j.Spec.Template.ObjectMeta, mp, batchv1.ControllerUidLabel, uid)...)
	errs = append(errs, hasLabel(&j.Spec.Template.ObjectMeta, mp, batchv1.JobNameLabel, j.Name)...)
	expected := labels.Set{
		legacyControllerUIDLabel:   uid,
		legacyJobNameLabel:         j.Name,
		batchv1.ControllerUidLabel: uid,
		batchv1.JobNameLabel:       j.Name,
	}
	if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !sel.Matches(expected) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

func hasLabel(m *metav1.ObjectMeta, p *field.Path, key, want string) field.ErrorList {
	got, ok := m.Labels[key]
	if !ok {
		return field.ErrorList{field.Required(p.Child("labels").Key(key), key)}
	}
	if got != want {
		return field.ErrorList{field.Invalid(p.Child("labels").Key(key), m.Labels, fmt.Sprintf("must be '%s'", want))}
	}
	return nil
}

// validateJobSpecWithSelector is the check of a Job's own spec: the spec
// rules plus a required selector that selects the template.
func validateJobSpecWithSelector(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	errs := validateJobSpec(spec, p)
	if spec.Selector == nil {
		errs = append(errs, field.Required(p.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

const (
	maxParallelismForIndexedJob             = 100000
	maxFailedIndexesForIndexedJob           = 100_000
	completionsSoftLimit                    = 100_000
	parallelismLimitForHighCompletions      = 10_000
	maxFailedIndexesLimitForHighCompletions = 10_000
	maxPodFailurePolicyRules                = 20
	maxPodFailurePolicyOnExitCodesValues    = 255
	maxPodFailurePolicyOnPodConditions      = 20
	maxManagedByLength                      = 63
	maxSuccessPolicySucceededIndexesLength  = 64 * 1024
	maxSuccessPolicyRules                   = 20
)

// validateJobSpec holds the rules shared by a Job and a CronJob's job
// template.
func validateJobSpec(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	nonNeg := func(v *int32, name string) {
		if v != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*v), p.Child(name))...)
		}
	}
	nonNeg(spec.Parallelism, "parallelism")
	nonNeg(spec.Completions, "completions")
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*spec.ActiveDeadlineSeconds, p.Child("activeDeadlineSeconds"))...)
	}
	nonNeg(spec.BackoffLimit, "backoffLimit")
	nonNeg(spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished")
	nonNeg(spec.BackoffLimitPerIndex, "backoffLimitPerIndex")
	if spec.MaxFailedIndexes != nil {
		nonNeg(spec.MaxFailedIndexes, "maxFailedIndexes")
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(p.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
	}
	if spec.ManagedBy != nil {
		errs = append(errs, validation.IsDomainPrefixedPath(p.Child("managedBy"), *spec.ManagedBy)...)
		if len(*spec.ManagedBy) > maxManagedByLength {
			errs = append(errs, field.TooLong(p.Child("managedBy"), "", maxManagedByLength))
		}
	}

	indexed := ptrValue(spec.CompletionMode) == batchv1.IndexedCompletion
	if spec.CompletionMode != nil {
		mode := *spec.CompletionMode
		if mode != batchv1.NonIndexedCompletion && mode != batchv1.IndexedCompletion {
			errs = append(errs, field.NotSupported(p.Child("completionMode"), mode, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
	}
	if indexed {
		if spec.Completions == nil {
			errs = append(errs, field.Required(p.Child("completions"), "when completion mode is Indexed"))
		}
		if spec.Parallelism != nil && *spec.Parallelism > maxParallelismForIndexedJob {
			errs = append(errs, field.Invalid(p.Child("parallelism"), *spec.Parallelism, fmt.Sprintf("must be less than or equal to %d when completion mode is Indexed", maxParallelismForIndexedJob)))
		}
		if spec.Completions != nil && spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > *spec.Completions {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "must be less than or equal to completions"))
		}
		if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesForIndexedJob {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
		}
		if spec.Completions != nil && *spec.Completions > completionsSoftLimit && spec.BackoffLimitPerIndex != nil {
			if spec.MaxFailedIndexes == nil {
				errs = append(errs, field.Required(p.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
			}
			if spec.Parallelism != nil && *spec.Parallelism > parallelismLimitForHighCompletions {
				errs = append(errs, field.Invalid(p.Child("parallelism"), *spec.Parallelism, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismLimitForHighCompletions, completionsSoftLimit)))
			}
			if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesLimitForHighCompletions {
				errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesLimitForHighCompletions, completionsSoftLimit)))
			}
		}
	} else {
		if spec.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(p.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}

	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, p.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		if !indexed {
			errs = append(errs, field.Invalid(p.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		} else {
			errs = append(errs, validateSuccessPolicy(spec, p.Child("successPolicy"))...)
		}
	}
	if spec.PodReplacementPolicy != nil {
		rp := p.Child("podReplacementPolicy")
		switch {
		case spec.PodFailurePolicy != nil:
			if *spec.PodReplacementPolicy != batchv1.Failed {
				errs = append(errs, field.NotSupported(rp, *spec.PodReplacementPolicy, []batchv1.PodReplacementPolicy{batchv1.Failed}))
			}
		case *spec.PodReplacementPolicy != batchv1.Failed && *spec.PodReplacementPolicy != batchv1.TerminatingOrFailed:
			errs = append(errs, field.NotSupported(rp, *spec.PodReplacementPolicy, []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}))
		}
	}

	tp := p.Child("template")
	errs = append(errs, podspec.ValidatePodTemplateSpec(&spec.Template, tp)...)
	restart := spec.Template.Spec.RestartPolicy
	rpath := tp.Child("spec", "restartPolicy")
	switch {
	case restart == corev1.RestartPolicyAlways || restart == "":
		errs = append(errs, field.Required(rpath, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case restart != corev1.RestartPolicyOnFailure && restart != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(rpath, restart, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case spec.PodFailurePolicy != nil && restart != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(rpath, restart, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

var (
	podFailurePolicyActions = []batchv1.PodFailurePolicyAction{
		batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore,
	}
	onExitCodesOperators = []batchv1.PodFailurePolicyOnExitCodesOperator{
		batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn,
	}
	onPodConditionStatuses = []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}
)

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func validatePodFailurePolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := p.Child("rules")
	rules := spec.PodFailurePolicy.Rules
	if len(rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxPodFailurePolicyRules))
	}
	containers := map[string]bool{}
	for _, c := range spec.Template.Spec.Containers {
		containers[c.Name] = true
	}
	for _, c := range spec.Template.Spec.InitContainers {
		containers[c.Name] = true
	}
	for i := range rules {
		rule := &rules[i]
		rp := rulesPath.Index(i)
		ap := rp.Child("action")
		switch {
		case rule.Action == "":
			errs = append(errs, field.Required(ap, fmt.Sprintf("valid values: %q", podFailurePolicyActions)))
		case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
			if spec.BackoffLimitPerIndex == nil {
				errs = append(errs, field.Invalid(ap, rule.Action, "requires the backoffLimitPerIndex to be set"))
			}
		case !contains(podFailurePolicyActions, rule.Action):
			errs = append(errs, field.NotSupported(ap, rule.Action, podFailurePolicyActions))
		}
		if rule.OnExitCodes != nil {
			errs = append(errs, validateOnExitCodes(rule.OnExitCodes, rp.Child("onExitCodes"), containers)...)
		}
		if len(rule.OnPodConditions) > 0 {
			cp := rp.Child("onPodConditions")
			if len(rule.OnPodConditions) > maxPodFailurePolicyOnPodConditions {
				errs = append(errs, field.TooMany(cp, len(rule.OnPodConditions), maxPodFailurePolicyOnPodConditions))
			}
			for j, pat := range rule.OnPodConditions {
				pp := cp.Index(j)
				for _, msg := range validation.IsQualifiedName(string(pat.Type)) {
					errs = append(errs, field.Invalid(pp.Child("type"), pat.Type, msg))
				}
				switch {
				case pat.Status == "":
					errs = append(errs, field.Required(pp.Child("status"), fmt.Sprintf("valid values: %q", onPodConditionStatuses)))
				case !contains(onPodConditionStatuses, pat.Status):
					errs = append(errs, field.NotSupported(pp.Child("status"), pat.Status, onPodConditionStatuses))
				}
			}
		}
		if rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0 {
			errs = append(errs, field.Invalid(rp, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
		}
		if rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0 {
			errs = append(errs, field.Invalid(rp, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
		}
	}
	return errs
}

func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, p *field.Path, containers map[string]bool) field.ErrorList {
	var errs field.ErrorList
	op := p.Child("operator")
	switch {
	case req.Operator == "":
		errs = append(errs, field.Required(op, fmt.Sprintf("valid values: %q", onExitCodesOperators)))
	case !contains(onExitCodesOperators, req.Operator):
		errs = append(errs, field.NotSupported(op, req.Operator, onExitCodesOperators))
	}
	if req.ContainerName != nil && !containers[*req.ContainerName] {
		errs = append(errs, field.Invalid(p.Child("containerName"), *req.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	vp := p.Child("values")
	if len(req.Values) == 0 {
		errs = append(errs, field.Invalid(vp, req.Values, "at least one value is required"))
	} else if len(req.Values) > maxPodFailurePolicyOnExitCodesValues {
		errs = append(errs, field.TooMany(vp, len(req.Values), maxPodFailurePolicyOnExitCodesValues))
	}
	seen := map[int32]bool{}
	ordered := true
	for j, v := range req.Values {
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(vp.Index(j), v, "must not be 0 for the In operator"))
		}
		if seen[v] {
			errs = append(errs, field.Duplicate(vp.Index(j), v))
		}
		seen[v] = true
		if j > 0 && req.Values[j-1] > v {
			ordered = false
		}
	}
	if !ordered {
		errs = append(errs, field.Invalid(vp, req.Values, "must be ordered"))
	}
	return errs
}

func validateSuccessPolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := p.Child("rules")
	rules := spec.SuccessPolicy.Rules
	if len(rules) == 0 {
		errs = append(errs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxSuccessPolicyRules))
	}
	completions := ptrValue(spec.Completions)
	for i, rule := range rules {
		rp := rulesPath.Index(i)
		if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
			errs = append(errs, field.Required(rp, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var total int32
		if rule.SucceededIndexes != nil {
			ip := rp.Child("succeededIndexes")
			if len(*rule.SucceededIndexes) > maxSuccessPolicySucceededIndexesLength {
				errs = append(errs, field.TooLong(ip, "", maxSuccessPolicySucceededIndexesLength))
			}
			var err error
			if total, err = countIndexes(*rule.SucceededIndexes, completions); err != nil {
				errs = append(errs, field.Invalid(ip, *rule.SucceededIndexes, "error parsing succeededIndexes: "+err.Error()))
			}
		}
		if rule.SucceededCount != nil {
			cp := rp.Child("succeededCount")
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*rule.SucceededCount), cp)...)
			if *rule.SucceededCount > completions {
				errs = append(errs, field.Invalid(cp, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if rule.SucceededIndexes != nil && *rule.SucceededCount > total {
				errs = append(errs, field.Invalid(cp, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
			}
		}
	}
	return errs
}

// countIndexes parses an index list such as "1,3-5,7" (increasing, each
// below completions) and returns how many indexes it names.
func countIndexes(s string, completions int32) (int32, error) {
	if s == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, interval := range splitComma(s) {
		x, y, err := parseIndexInterval(interval, completions)
		if err != nil {
			return 0, err
		}
		if last >= x {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, x)
		}
		total += y - x + 1
		last = y
	}
	return total, nil
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func parseIndexInterval(s string, completions int32) (int32, int32, error) {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '-' {
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	parts = append(parts, s[start:])
	if len(parts) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", s)
	}
	parse := func(p string) (int32, error) {
		n, err := strconv.Atoi(p)
		if err != nil {
			return 0, fmt.Errorf("cannot convert string to integer for index: %q", p)
		}
		if n >= int(completions) {
			return 0, fmt.Errorf("too large index: %q", p)
		}
		return int32(n), nil
	}
	x, err := parse(parts[0])
	if err != nil {
		return 0, 0, err
	}
	if len(parts) == 1 {
		return x, x, nil
	}
	y, err := parse(parts[1])
	if err != nil {
		return 0, 0, err
	}
	if x >= y {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", x, y)
	}
	return x, y, nil
}

// validateJobUpdate holds the rules for what may change in a Job.
func validateJobUpdate(j, old *batchv1.Job) field.ErrorList {
	p := field.NewPath("spec")
	spec, oldSpec := &j.Spec, &old.Spec
	var errs field.ErrorList

	// Completions may change only for Indexed jobs, together with parallelism.
	cp := p.Child("completions")
	if ptrValue(spec.CompletionMode) != batchv1.IndexedCompletion {
		errs = append(errs, apivalidation.ValidateImmutableField(spec.Completions, oldSpec.Completions, cp)...)
	} else if !equality.Semantic.DeepEqual(spec.Completions, oldSpec.Completions) && spec.Completions != nil &&
		*spec.Completions != ptrValue(spec.Parallelism) {
		errs = append(errs, field.Invalid(cp, spec.Completions, "can only be modified in tandem with spec.parallelism"))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(spec.Selector, oldSpec.Selector, p.Child("selector"))...)
	errs = append(errs, validatePodTemplateUpdate(j, old, p)...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.CompletionMode, oldSpec.CompletionMode, p.Child("completionMode"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.PodFailurePolicy, oldSpec.PodFailurePolicy, p.Child("podFailurePolicy"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.BackoffLimitPerIndex, oldSpec.BackoffLimitPerIndex, p.Child("backoffLimitPerIndex"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.ManagedBy, oldSpec.ManagedBy, p.Child("managedBy"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.SuccessPolicy, oldSpec.SuccessPolicy, p.Child("successPolicy"))...)
	return errs
}

// validatePodTemplateUpdate keeps the template fixed, except that a
// suspended job that never started may change its scheduling directives
// (node affinity, node selector, tolerations, scheduling gates) and the
// template's labels and annotations.
func validatePodTemplateUpdate(j, old *batchv1.Job, p *field.Path) field.ErrorList {
	tmpl := &j.Spec.Template
	oldTmpl := &old.Spec.Template
	if ptrValue(old.Spec.Suspend) && old.Status.StartTime == nil {
		oldTmpl = oldTmpl.DeepCopy()
		switch {
		case tmpl.Spec.Affinity == nil && oldTmpl.Spec.Affinity != nil:
			oldTmpl.Spec.Affinity.NodeAffinity = nil
			if equality.Semantic.DeepEqual(*oldTmpl.Spec.Affinity, corev1.Affinity{}) {
				oldTmpl.Spec.Affinity = nil
			}
		case tmpl.Spec.Affinity != nil && oldTmpl.Spec.Affinity == nil:
			oldTmpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: tmpl.Spec.Affinity.NodeAffinity}
		case tmpl.Spec.Affinity != nil && oldTmpl.Spec.Affinity != nil:
			oldTmpl.Spec.Affinity.NodeAffinity = tmpl.Spec.Affinity.NodeAffinity
		}
		oldTmpl.Spec.NodeSelector = tmpl.Spec.NodeSelector
		oldTmpl.Spec.Tolerations = tmpl.Spec.Tolerations
		oldTmpl.Annotations = tmpl.Annotations
		oldTmpl.Labels = tmpl.Labels
		oldTmpl.Spec.SchedulingGates = tmpl.Spec.SchedulingGates
	}
	return apivalidation.ValidateImmutableField(tmpl, oldTmpl, p.Child("template"))
}

func validateJobStatusUpdate(j, old *batchv1.Job) field.ErrorList {
	p := field.NewPath("status")
	s := &j.Status
	errs := apivalidation.ValidateNonnegativeField(int64(s.Active), p.Child("active"))
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.Succeeded), p.Child("succeeded"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.Failed), p.Child("failed"))...)
	if s.Ready != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.Ready), p.Child("ready"))...)
	}
	if s.Terminating != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.Terminating), p.Child("terminating"))...)
	}
	if u := s.UncountedTerminatedPods; u != nil {
		up := p.Child("uncountedTerminatedPods")
		seen := map[string]bool{}
		check := func(list []string, lp *field.Path) {
			for i, uid := range list {
				switch {
				case uid == "":
					errs = append(errs, field.Invalid(lp.Index(i), uid, "must not be empty"))
				case seen[uid]:
					errs = append(errs, field.Duplicate(lp.Index(i), uid))
				default:
					seen[uid] = true
				}
			}
		}
		check(uidStrings(u.Succeeded), up.Child("succeeded"))
		check(uidStrings(u.Failed), up.Child("failed"))
	}
	complete, failed := conditionTrue(j, batchv1.JobComplete), conditionTrue(j, batchv1.JobFailed)
	if complete && failed && (complete != conditionTrue(old, batchv1.JobComplete) || failed != conditionTrue(old, batchv1.JobFailed)) {
		errs = append(errs, field.Invalid(p.Child("conditions"), field.OmitValueType{}, "cannot set Complete=True and Failed=true conditions"))
	}
	if s.Ready != nil && *s.Ready > s.Active && (!equality.Semantic.DeepEqual(s.Ready, old.Status.Ready) || s.Active != old.Status.Active) {
		errs = append(errs, field.Invalid(p.Child("ready"), *s.Ready, "cannot set more ready pods than active"))
	}
	errs = append(errs, validateFailedIndexes(j, old, p.Child("failedIndexes"))...)
	// A finished job stays finished.
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
		if conditionTrue(old, t) && !conditionTrue(j, t) {
			errs = append(errs, field.Invalid(p.Child("conditions"), field.OmitValueType{}, fmt.Sprintf("cannot disable the terminal %s=True condition", t)))
		}
	}
	return errs
}

// validateFailedIndexes checks a changed status.failedIndexes as upstream
// does: only with backoffLimitPerIndex, well formed, and (also when
// completedIndexes changed) apart from completedIndexes.
func validateFailedIndexes(j, old *batchv1.Job, p *field.Path) field.ErrorList {
	s, failed := &j.Status, j.Status.FailedIndexes
	if failed == nil {
		return nil
	}
	var errs field.ErrorList
	failedChanged := old.Status.FailedIndexes == nil || *old.Status.FailedIndexes != *failed
	completions := j.Spec.Completions
	if failedChanged {
		if j.Spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(p, *failed, "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
		} else if completions != nil {
			if _, err := countIndexes(*failed, *completions); err != nil {
				errs = append(errs, field.Invalid(p, failed, fmt.Sprintf("error parsing failedIndexes: %s", err.Error())))
			}
		}
	}
	if (failedChanged || s.CompletedIndexes != old.Status.CompletedIndexes) && completions != nil {
		if ix, ok := firstOverlap(parsedIntervals(s.CompletedIndexes, *completions), parsedIntervals(*failed, *completions)); ok {
			errs = append(errs, field.Invalid(p, *failed, fmt.Sprintf("failedIndexes and completedIndexes overlap at index: %d", ix)))
		}
	}
	return errs
}

// parsedIntervals are the well-formed intervals of an index list (the
// others are reported by the format check).
func parsedIntervals(s string, completions int32) [][2]int32 {
	if s == "" {
		return nil
	}
	var out [][2]int32
	for _, part := range splitComma(s) {
		if x, y, err := parseIndexInterval(part, completions); err == nil {
			out = append(out, [2]int32{x, y})
		}
	}
	return out
}

// firstOverlap walks two ordered interval lists to the first index both
// hold.
func firstOverlap(a, b [][2]int32) (int32, bool) {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		if a[i][0] <= b[j][1] && b[j][0] <= a[i][1] {
			return max(a[i][0], b[j][0]), true
		}
		if a[i][0] <= b[j][0] {
			i++
		} else {
			j++
		}
	}
	return 0, false
}

func uidStrings[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

func conditionTrue(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
