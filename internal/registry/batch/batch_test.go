package batch

import (
	"context"
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func resource(t *testing.T, plural string) registry.Resource {
	t.Helper()
	for _, r := range Resources() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %q", plural)
	return registry.Resource{}
}

// expectErrors checks that errs are exactly the wanted ones, each given as a
// prefix of "path: type: detail".
func expectErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%s: %s: %s", e.Field, e.Type, e.Detail))
	}
	if len(got) != len(want) {
		t.Fatalf("got errors %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func testJob() *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "1234"},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "pi", Image: "perl"}},
				},
			},
		},
	}
}

// create runs a job through the create path: defaults, prepare, validate.
func create(st registry.Strategy, j *batchv1.Job) field.ErrorList {
	st.Default(j)
	st.PrepareForCreate(context.Background(), j)
	return st.Validate(j)
}

func TestJobDefaultsAndGeneratedSelector(t *testing.T) {
	st := resource(t, "jobs").Strategy
	j := testJob()
	expectErrors(t, create(st, j))

	s := j.Spec
	if *s.Parallelism != 1 || *s.Completions != 1 || *s.BackoffLimit != 6 ||
		*s.CompletionMode != batchv1.NonIndexedCompletion || *s.Suspend ||
		*s.PodReplacementPolicy != batchv1.TerminatingOrFailed || *s.ManualSelector {
		t.Errorf("defaulted spec = %+v", s)
	}
	wantLabels := map[string]string{
		"job-name": "pi", "controller-uid": "1234",
		batchv1.JobNameLabel: "pi", batchv1.ControllerUidLabel: "1234",
	}
	for k, v := range wantLabels {
		if j.Spec.Template.Labels[k] != v {
			t.Errorf("template label %s = %q, want %q", k, j.Spec.Template.Labels[k], v)
		}
		if j.Labels[k] != v {
			t.Errorf("job label %s = %q, want %q", k, j.Labels[k], v)
		}
	}
	if got := j.Spec.Selector.MatchLabels; len(got) != 1 || got[batchv1.ControllerUidLabel] != "1234" {
		t.Errorf("selector = %v", got)
	}

	// Parallelism alone leaves completions unset; a pod failure policy
	// makes pods replaced only once failed.
	j = testJob()
	j.Spec.Parallelism = ptr(int32(3))
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:          batchv1.PodFailurePolicyActionFailJob,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
	}}}
	expectErrors(t, create(st, j))
	if j.Spec.Completions != nil || *j.Spec.PodReplacementPolicy != batchv1.Failed ||
		j.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status != corev1.ConditionTrue {
		t.Errorf("defaulted spec = %+v", j.Spec)
	}
}

func TestJobValidate(t *testing.T) {
	st := resource(t, "jobs").Strategy
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []string
	}{
		{
			name:   "restartPolicy defaulted to Always",
			mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" },
			want:   []string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		},
		{
			name:   "negative completions",
			mutate: func(j *batchv1.Job) { j.Spec.Completions = ptr(int32(-1)) },
			want:   []string{"spec.completions: Invalid value: must be greater than or equal to 0"},
		},
		{
			name:   "negative parallelism",
			mutate: func(j *batchv1.Job) { j.Spec.Parallelism = ptr(int32(-2)) },
			want:   []string{"spec.parallelism: Invalid value: must be greater than or equal to 0"},
		},
		{
			name:   "negative backoffLimit",
			mutate: func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr(int32(-1)) },
			want:   []string{"spec.backoffLimit: Invalid value: must be greater than or equal to 0"},
		},
		{
			name: "conflicting job-name label",
			mutate: func(j *batchv1.Job) {
				j.Spec.Template.Labels = map[string]string{"job-name": "other"}
			},
			want: []string{"spec.template.metadata.labels[job-name]: Invalid value: must be 'pi'"},
		},
		{
			name: "manual selector not matching",
			mutate: func(j *batchv1.Job) {
				j.Spec.ManualSelector = ptr(true)
				j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
			},
			want: []string{"spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`"},
		},
		{
			name: "indexed without completions",
			mutate: func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
				j.Spec.Parallelism = ptr(int32(2))
			},
			want: []string{"spec.completions: Required value: when completion mode is Indexed"},
		},
		{
			name:   "pod failure policy needs Never",
			mutate: podFailurePolicyWithOnFailure,
			want:   []string{`spec.template.spec.restartPolicy: Invalid value: only "Never" is supported when podFailurePolicy is specified`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob()
			tc.mutate(j)
			expectErrors(t, create(st, j), tc.want...)
		})
	}
}

func podFailurePolicyWithOnFailure(j *batchv1.Job) {
	j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:      batchv1.PodFailurePolicyActionIgnore,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}},
	}}}
}

func TestJobUpdate(t *testing.T) {
	st := resource(t, "jobs").Strategy
	old := testJob()
	expectErrors(t, create(st, old))

	tests := []struct {
		name   string
		old    func(*batchv1.Job)
		mutate func(*batchv1.Job)
		want   []string
	}{
		{
			name:   "template is immutable",
			mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "perl:2" },
			want:   []string{"spec.template: Invalid value: field is immutable"},
		},
		{
			name:   "completions are immutable",
			mutate: func(j *batchv1.Job) { j.Spec.Completions = ptr(int32(4)) },
			want:   []string{"spec.completions: Invalid value: field is immutable"},
		},
		{
			name:   "parallelism may change",
			mutate: func(j *batchv1.Job) { j.Spec.Parallelism = ptr(int32(4)) },
		},
		{
			name: "suspended job that never ran may change node selector",
			old:  func(j *batchv1.Job) { j.Spec.Suspend = ptr(true) },
			mutate: func(j *batchv1.Job) {
				j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
			},
		},
		{
			name: "but not its image",
			old:  func(j *batchv1.Job) { j.Spec.Suspend = ptr(true) },
			mutate: func(j *batchv1.Job) {
				j.Spec.Template.Spec.Containers[0].Image = "perl:2"
			},
			want: []string{"spec.template: Invalid value: field is immutable"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := old.DeepCopy()
			if tc.old != nil {
				tc.old(o)
			}
			j := o.DeepCopy()
			tc.mutate(j)
			expectErrors(t, st.ValidateUpdate(j, o), tc.want...)
		})
	}
}

func TestJobStatusUpdate(t *testing.T) {
	st := resource(t, "jobs").Strategy
	old := testJob()
	old.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	j := old.DeepCopy()
	j.Status.Conditions = nil
	j.Status.Active = -1
	expectErrors(t, st.ValidateStatusUpdate(j, old),
		"status.active: Invalid value: must be greater than or equal to 0",
		"status.conditions: Invalid value: cannot disable the terminal Complete=True condition")
	if got := resource(t, "jobs").Strategy.SelectableFields(&batchv1.Job{Status: batchv1.JobStatus{Succeeded: 3}}); got["status.successful"] != "3" {
		t.Errorf("selectable fields = %v", got)
	}
}

func TestJobStatusFailedIndexes(t *testing.T) {
	st := resource(t, "jobs").Strategy
	indexed := testJob()
	indexed.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
	indexed.Spec.Completions = ptr(int32(6))
	perIndex := indexed.DeepCopy()
	perIndex.Spec.BackoffLimitPerIndex = ptr(int32(1))
	tests := []struct {
		name               string
		job                *batchv1.Job
		completed          string
		failed, prevFailed *string
		want               []string
	}{
		{name: "well formed", job: perIndex, completed: "0,2", failed: ptr("1,3-5")},
		{name: "empty", job: perIndex, failed: ptr("")},
		{name: "without backoffLimitPerIndex", job: indexed, failed: ptr("1"),
			want: []string{"status.failedIndexes: Invalid value: cannot set non-null failedIndexes when backoffLimitPerIndex is null"}},
		{name: "malformed", job: perIndex, failed: ptr("1,7"),
			want: []string{`status.failedIndexes: Invalid value: error parsing failedIndexes: too large index: "7"`}},
		{name: "overlapping completed", job: perIndex, completed: "0,1,4", failed: ptr("2-5"),
			want: []string{"status.failedIndexes: Invalid value: failedIndexes and completedIndexes overlap at index: 4"}},
		{name: "unchanged is not checked again", job: indexed, failed: ptr("1"), prevFailed: ptr("1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := tt.job.DeepCopy()
			old.Status.FailedIndexes = tt.prevFailed
			old.Status.CompletedIndexes = tt.completed
			j := old.DeepCopy()
			j.Status.FailedIndexes = tt.failed
			expectErrors(t, st.ValidateStatusUpdate(j, old), tt.want...)
		})
	}
}

func testCronJob() *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: batchv1.CronJobSpec{
			Schedule: "*/5 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyOnFailure,
					Containers:    []corev1.Container{{Name: "hello", Image: "busybox"}},
				},
			}}},
		},
	}
}

func TestCronJobDefaults(t *testing.T) {
	st := resource(t, "cronjobs").Strategy
	cj := testCronJob()
	st.Default(cj)
	s := cj.Spec
	if s.ConcurrencyPolicy != batchv1.AllowConcurrent || *s.Suspend || *s.SuccessfulJobsHistoryLimit != 3 || *s.FailedJobsHistoryLimit != 1 {
		t.Errorf("defaulted spec = %+v", s)
	}
	// The job template keeps its job fields unset, as upstream's does.
	if s.JobTemplate.Spec.BackoffLimit != nil || s.JobTemplate.Spec.Parallelism != nil {
		t.Errorf("job template got job defaults: %+v", s.JobTemplate.Spec)
	}
	if s.JobTemplate.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("job template's pod spec not defaulted: %+v", s.JobTemplate.Spec.Template.Spec)
	}
	expectErrors(t, st.Validate(cj))
}

func TestCronJobValidate(t *testing.T) {
	st := resource(t, "cronjobs").Strategy
	tests := []struct {
		name     string
		schedule string
		mutate   func(*batchv1.CronJob)
		want     []string
	}{
		{name: "descriptor", schedule: "@hourly"},
		{name: "every", schedule: "@every 1h30m"},
		{name: "names and ranges", schedule: "0 9-17/2 ? JAN-jun mon-fri"},
		{name: "lists", schedule: "0,15,30,45 0 1,15 * *"},
		{name: "empty", schedule: "", want: []string{"spec.schedule: Required value"}},
		{
			name: "too few fields", schedule: "* * *",
			want: []string{"spec.schedule: Invalid value: expected exactly 5 fields, found 3: [* * *]"},
		},
		{
			name: "minute out of range", schedule: "60 * * * *",
			want: []string{"spec.schedule: Invalid value: end of range (60) above maximum (59): 60"},
		},
		{
			name: "not a number", schedule: "x * * * *",
			want: []string{`spec.schedule: Invalid value: failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax`},
		},
		{
			name: "backwards range", schedule: "* 5-2 * * *",
			want: []string{"spec.schedule: Invalid value: beginning of range (5) beyond end of range (2): 5-2"},
		},
		{
			name: "zero step", schedule: "*/0 * * * *",
			want: []string{"spec.schedule: Invalid value: step of range should be a positive number: */0"},
		},
		{
			name: "unknown descriptor", schedule: "@fortnightly",
			want: []string{"spec.schedule: Invalid value: unrecognized descriptor: @fortnightly"},
		},
		{
			name: "time zone in schedule", schedule: "TZ=UTC 0 * * * *",
			want: []string{"spec.schedule: Invalid value: cannot use TZ or CRON_TZ in schedule, use timeZone field instead"},
		},
		{
			name: "unknown time zone", schedule: "0 * * * *",
			mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Mars/Olympus") },
			want:   []string{"spec.timeZone: Invalid value: unknown time zone Mars/Olympus"},
		},
		{
			name: "known time zone", schedule: "0 * * * *",
			mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Europe/Paris") },
		},
		{
			name: "job template with a selector", schedule: "0 * * * *",
			mutate: func(cj *batchv1.CronJob) {
				cj.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
			},
			want: []string{"spec.jobTemplate.spec.selector: Invalid value: `selector` will be auto-generated"},
		},
		{
			name: "job template restarting Always", schedule: "0 * * * *",
			mutate: func(cj *batchv1.CronJob) {
				cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			},
			want: []string{"spec.jobTemplate.spec.template.spec.restartPolicy: Required value"},
		},
		{
			name: "bad concurrency policy", schedule: "0 * * * *",
			mutate: func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Sometimes" },
			want:   []string{"spec.concurrencyPolicy: Unsupported value"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cj := testCronJob()
			cj.Spec.Schedule = tc.schedule
			if tc.mutate != nil {
				tc.mutate(cj)
			}
			st.Default(cj)
			expectErrors(t, st.Validate(cj), tc.want...)
		})
	}
}

func TestCronJobName(t *testing.T) {
	st := resource(t, "cronjobs").Strategy
	if msgs := st.ValidateName(strings.Repeat("a", 52), false); len(msgs) != 0 {
		t.Errorf("52 characters: %q", msgs)
	}
	if msgs := st.ValidateName(strings.Repeat("a", 53), false); len(msgs) != 1 || msgs[0] != "must be no more than 52 bytes" {
		t.Errorf("53 characters: %q", msgs)
	}
}
