package cronjob

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestScheduleNext(t *testing.T) {
	tests := []struct {
		spec, from string
		want       []string // the next activations, in order
	}{
		{"* * * * *", "2026-03-01T12:00:30Z", []string{"2026-03-01T12:01:00Z", "2026-03-01T12:02:00Z"}},
		{"*/15 * * * *", "2026-03-01T12:00:00Z", []string{"2026-03-01T12:15:00Z", "2026-03-01T12:30:00Z", "2026-03-01T12:45:00Z", "2026-03-01T13:00:00Z"}},
		{"5 4 * * *", "2026-03-01T04:05:00Z", []string{"2026-03-02T04:05:00Z"}},
		{"0 9-17/4 * * mon-fri", "2026-03-06T16:00:00Z", []string{"2026-03-06T17:00:00Z", "2026-03-09T09:00:00Z", "2026-03-09T13:00:00Z"}}, // Friday → Monday
		{"30 2 1,15 * *", "2026-03-02T00:00:00Z", []string{"2026-03-15T02:30:00Z", "2026-04-01T02:30:00Z"}},
		// Both day fields restricted: either matches (the 13th, or Fridays).
		{"0 0 13 * 5", "2026-03-01T00:00:00Z", []string{"2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z", "2026-03-20T00:00:00Z"}},
		// Day of week restricted, day of month *: both must match.
		{"0 0 * * 0", "2026-03-01T00:00:00Z", []string{"2026-03-08T00:00:00Z"}},
		{"0 0 1 jan *", "2026-03-01T00:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@hourly", "2026-03-01T12:59:59Z", []string{"2026-03-01T13:00:00Z", "2026-03-01T14:00:00Z"}},
		{"@daily", "2026-03-01T12:00:00Z", []string{"2026-03-02T00:00:00Z"}},
		{"@weekly", "2026-03-01T12:00:00Z", []string{"2026-03-08T00:00:00Z"}}, // 1 March 2026 is a Sunday
		{"@monthly", "2026-03-01T12:00:00Z", []string{"2026-04-01T00:00:00Z"}},
		{"@yearly", "2026-03-01T12:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@every 90s", "2026-03-01T12:00:00.5Z", []string{"2026-03-01T12:01:30Z", "2026-03-01T12:03:00Z"}},
		// 09:00 in Paris is 08:00 UTC in winter, 07:00 UTC in summer.
		{"CRON_TZ=Europe/Paris 0 9 * * *", "2026-03-28T12:00:00Z", []string{"2026-03-29T07:00:00Z", "2026-03-30T07:00:00Z"}},
		{"TZ=America/New_York 0 0 * * *", "2026-01-01T00:00:00Z", []string{"2026-01-01T05:00:00Z"}},
		// Never: February has no 31st.
		{"0 0 31 2 *", "2026-01-01T00:00:00Z", []string{"0001-01-01T00:00:00Z"}},
	}
	for _, tt := range tests {
		s, err := ParseSchedule(tt.spec)
		if err != nil {
			t.Errorf("ParseSchedule(%q): %v", tt.spec, err)
			continue
		}
		at := mustTime(t, tt.from)
		for i, w := range tt.want {
			at = s.Next(at)
			if !at.Equal(mustTime(t, w)) {
				t.Errorf("%q from %s: activation %d = %s, want %s", tt.spec, tt.from, i, at.UTC().Format(time.RFC3339), w)
				break
			}
		}
	}
}

func TestParseScheduleErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"":                     "empty spec string",
		"* * * *":              "expected exactly 5 fields, found 4: [* * * *]",
		"60 * * * *":           "end of range (60) above maximum (59): 60",
		"* * 0 * *":            "beginning of range (0) below minimum (1): 0",
		"5-1 * * * *":          "beginning of range (5) beyond end of range (1): 5-1",
		"*/0 * * * *":          "step of range should be a positive number: */0",
		"1-2-3 * * * *":        "too many hyphens: 1-2-3",
		"x * * * *":            `failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax`,
		"* * * * 7":            "end of range (7) above maximum (6): 7",
		"@sometimes":           "unrecognized descriptor: @sometimes",
		"TZ=Mars/Base * * * *": "provided bad location Mars/Base: unknown time zone Mars/Base",
	} {
		_, err := ParseSchedule(spec)
		if err == nil || err.Error() != want {
			t.Errorf("ParseSchedule(%q) = %v, want %q", spec, err, want)
		}
	}
}

func cronJob(mutate ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default", UID: "cj-uid",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC))},
		Spec: batchv1.CronJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: batchv1.AllowConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hello"}, Annotations: map[string]string{"a": "b"}},
				Spec:       batchv1.JobSpec{BackoffLimit: ptr.To[int32](2)},
			}},
	}
	for _, m := range mutate {
		m(cj)
	}
	return cj
}

func lastScheduled(s string) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) {
		t, _ := time.Parse(time.RFC3339, s)
		cj.Status.LastScheduleTime = &metav1.Time{Time: t}
	}
}

func TestNextScheduleTime(t *testing.T) {
	every := func(spec string) Schedule {
		s, err := ParseSchedule(spec)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name    string
		cj      *batchv1.CronJob
		sched   string
		now     string
		want    string // "" for none
		missed  missed
		requeue time.Duration
	}{
		{name: "before the first schedule", cj: cronJob(), sched: "* * * * *", now: "2026-03-01T12:00:45Z",
			requeue: 15*time.Second + nextScheduleDelta},
		{name: "the first schedule is due", cj: cronJob(), sched: "* * * * *", now: "2026-03-01T12:01:05Z",
			want: "2026-03-01T12:01:00Z", requeue: 55*time.Second + nextScheduleDelta},
		{name: "after the last schedule time", cj: cronJob(lastScheduled("2026-03-01T12:01:00Z")), sched: "* * * * *", now: "2026-03-01T12:01:05Z",
			requeue: 55*time.Second + nextScheduleDelta},
		{name: "several missed: the most recent", cj: cronJob(lastScheduled("2026-03-01T12:01:00Z")), sched: "* * * * *", now: "2026-03-01T12:07:20Z",
			want: "2026-03-01T12:07:00Z", missed: fewMissed, requeue: 40*time.Second + nextScheduleDelta},
		{name: "many missed", cj: cronJob(lastScheduled("2026-03-01T12:01:00Z")), sched: "* * * * *", now: "2026-03-02T12:00:10Z",
			want: "2026-03-02T12:00:00Z", missed: manyMissed, requeue: 50*time.Second + nextScheduleDelta},
		{name: "the starting deadline hides older schedules",
			cj:    cronJob(lastScheduled("2026-03-01T10:00:00Z"), func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To[int64](120) }),
			sched: "0 * * * *", now: "2026-03-01T12:03:00Z", requeue: 57*time.Minute + nextScheduleDelta},
		{name: "within the starting deadline",
			cj:    cronJob(lastScheduled("2026-03-01T10:00:00Z"), func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To[int64](300) }),
			sched: "0 * * * *", now: "2026-03-01T12:03:00Z", want: "2026-03-01T12:00:00Z", requeue: 57*time.Minute + nextScheduleDelta},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := mustTime(t, tt.now)
			s := every(tt.sched)
			got, m, err := nextScheduleTime(tt.cj, now, s)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("scheduled %v, want none", got)
			case tt.want != "" && (got == nil || !got.Equal(mustTime(t, tt.want))):
				t.Errorf("scheduled %v, want %s", got, tt.want)
			}
			if m != tt.missed {
				t.Errorf("missed = %v, want %v", m, tt.missed)
			}
			if d := nextRequeue(tt.cj, now, s); d != tt.requeue {
				t.Errorf("nextRequeue = %v, want %v", d, tt.requeue)
			}
		})
	}

	if _, _, err := nextScheduleTime(cronJob(), mustTime(t, "2030-01-01T00:00:00Z"), every("0 0 31 2 *")); err == nil {
		t.Error("a schedule that never fires is not an error")
	}
}

func TestDecideStart(t *testing.T) {
	at := mustTime(t, "2026-03-01T12:01:00Z")
	running := func(cj *batchv1.CronJob) {
		cj.Status.Active = []corev1.ObjectReference{{Name: "hello-29540160", Namespace: "default", UID: "j1"}}
	}
	policy := func(p batchv1.ConcurrencyPolicy) func(*batchv1.CronJob) {
		return func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = p }
	}
	tests := []struct {
		name string
		cj   *batchv1.CronJob
		now  time.Time
		want startDecision
	}{
		{"start", cronJob(), at.Add(time.Second), startJob},
		{"allow runs concurrently", cronJob(running), at.Add(time.Second), startJob},
		{"forbid waits for the active job", cronJob(running, policy(batchv1.ForbidConcurrent)), at.Add(time.Second), skipForbidden},
		{"forbid with nothing active", cronJob(policy(batchv1.ForbidConcurrent)), at.Add(time.Second), startJob},
		{"replace deletes the active job", cronJob(running, policy(batchv1.ReplaceConcurrent)), at.Add(time.Second), replaceAndStart},
		{"already started (by name)", cronJob(func(cj *batchv1.CronJob) {
			cj.Status.Active = []corev1.ObjectReference{{Name: jobName(cj, at), Namespace: "default"}}
		}), at.Add(time.Second), skipProcessed},
		{"already started (last schedule time)", cronJob(lastScheduled("2026-03-01T12:01:00Z")), at.Add(time.Second), skipProcessed},
		{"too late", cronJob(func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To[int64](10) }), at.Add(11 * time.Second), skipTooLate},
		{"just in time", cronJob(func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To[int64](10) }), at.Add(10 * time.Second), startJob},
	}
	for _, tt := range tests {
		if got := decideStart(tt.cj, at, tt.now); got != tt.want {
			t.Errorf("%s: decideStart = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestJobFromTemplate(t *testing.T) {
	at := mustTime(t, "2026-03-01T12:01:00Z")
	cj := cronJob(func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Europe/Paris") })
	j, err := jobFromTemplate(cj, at)
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.GetControllerOf(j)
	switch {
	case j.Name != "hello-29539441":
		t.Errorf("name %q", j.Name)
	case j.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != "2026-03-01T13:01:00+01:00" || j.Annotations["a"] != "b":
		t.Errorf("annotations %v", j.Annotations)
	case j.Labels["app"] != "hello":
		t.Errorf("labels %v", j.Labels)
	case ref == nil || ref.Kind != "CronJob" || ref.UID != "cj-uid" || !ptr.Deref(ref.BlockOwnerDeletion, false):
		t.Errorf("controller %+v", ref)
	case ptr.Deref(j.Spec.BackoffLimit, 0) != 2:
		t.Errorf("spec %+v", j.Spec)
	}
	j.Labels["x"] = "y"
	if cj.Spec.JobTemplate.Labels["x"] != "" {
		t.Error("the template's labels were shared")
	}
	if a, _ := jobFromTemplate(cronJob(), at); a.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != "2026-03-01T12:01:00Z" {
		t.Errorf("UTC annotation %v", a.Annotations)
	}
}

func TestJobsToClean(t *testing.T) {
	job := func(name string, ct batchv1.JobConditionType, start int) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if start > 0 {
			j.Status.StartTime = &metav1.Time{Time: time.Unix(int64(start), 0)}
		}
		if ct != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: ct, Status: corev1.ConditionTrue}}
		}
		return j
	}
	jobs := []*batchv1.Job{
		job("ok3", batchv1.JobComplete, 30), job("ok1", batchv1.JobComplete, 10), job("ok2", batchv1.JobComplete, 20),
		job("bad1", batchv1.JobFailed, 15), job("bad2", batchv1.JobFailed, 25), job("running", "", 40),
	}
	limits := func(ok, bad *int32) *batchv1.CronJob {
		return cronJob(func(cj *batchv1.CronJob) {
			cj.Spec.SuccessfulJobsHistoryLimit, cj.Spec.FailedJobsHistoryLimit = ok, bad
		})
	}
	for _, tt := range []struct {
		name    string
		cj      *batchv1.CronJob
		want    []string
		ordered bool
	}{
		{"defaults 3 and 1", limits(ptr.To[int32](3), ptr.To[int32](1)), []string{"bad1"}, true},
		{"keep one success", limits(ptr.To[int32](1), ptr.To[int32](1)), []string{"ok1", "ok2", "bad1"}, true},
		{"keep nothing", limits(ptr.To[int32](0), ptr.To[int32](0)), []string{"ok1", "ok2", "ok3", "bad1", "bad2"}, true},
		{"no limits", limits(nil, nil), nil, true},
	} {
		var got []string
		for _, j := range jobsToClean(tt.cj, slices.Clone(jobs)) {
			got = append(got, j.Name)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: jobsToClean = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPlan(t *testing.T) {
	at := mustTime(t, "2026-03-01T12:01:00Z") // the first schedule time after creation
	now := at.Add(10 * time.Second)
	d := func(v time.Duration) *time.Duration { return &v }
	running := func(cj *batchv1.CronJob) {
		cj.Status.Active = []corev1.ObjectReference{{Name: "hello-29540100", Namespace: "default", UID: "j0"}}
	}
	tests := []struct {
		name    string
		cj      *batchv1.CronJob
		now     time.Time
		events  []string
		start   bool
		replace bool
		requeue *time.Duration
	}{
		{name: "due: start, then look again at the next minute", cj: cronJob(), now: now,
			start: true, requeue: d(50*time.Second + nextScheduleDelta)},
		{name: "not yet due: look again then", cj: cronJob(), now: at.Add(-10 * time.Second),
			requeue: d(10*time.Second + nextScheduleDelta)},
		{name: "suspended: nothing", cj: cronJob(func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptr.To(true) }), now: now},
		{name: "being deleted: nothing", cj: cronJob(func(cj *batchv1.CronJob) { cj.DeletionTimestamp = &metav1.Time{Time: at} }), now: now},
		{name: "unknown time zone", cj: cronJob(func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Mars/Olympus") }), now: now,
			events: []string{"UnknownTimeZone"}},
		{name: "unparseable schedule", cj: cronJob(func(cj *batchv1.CronJob) { cj.Spec.Schedule = "every day" }), now: now,
			events: []string{"UnparseableSchedule"}},
		{name: "TZ in the schedule is reported, and honoured",
			cj: cronJob(func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC * * * * *" }), now: now,
			events: []string{"UnsupportedSchedule"}, start: true, requeue: d(50*time.Second + nextScheduleDelta)},
		{name: "forbid while a job runs",
			cj:  cronJob(running, func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent }),
			now: now, events: []string{"JobAlreadyActive"}, requeue: d(50*time.Second + nextScheduleDelta)},
		{name: "replace the running job",
			cj:  cronJob(running, func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent }),
			now: now, start: true, replace: true, requeue: d(50*time.Second + nextScheduleDelta)},
		{name: "past the starting deadline: nothing to start",
			cj:  cronJob(func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To[int64](5) }),
			now: now, requeue: d(50*time.Second + nextScheduleDelta)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan(State{CronJob: tt.cj, Now: tt.now})
			var reasons []string
			for _, e := range p.Events {
				reasons = append(reasons, e.Reason)
			}
			if !slices.Equal(reasons, tt.events) {
				t.Errorf("events %v, want %v", reasons, tt.events)
			}
			if (p.Start != nil) != tt.start || (tt.start && !p.Start.Equal(at)) {
				t.Errorf("start %v, want %v at %v", p.Start, tt.start, at)
			}
			if p.ReplaceActive != tt.replace {
				t.Errorf("replace %v, want %v", p.ReplaceActive, tt.replace)
			}
			if (p.RequeueAfter == nil) != (tt.requeue == nil) || (p.RequeueAfter != nil && *p.RequeueAfter != *tt.requeue) {
				t.Errorf("requeue %v, want %v", fmtDur(p.RequeueAfter), fmtDur(tt.requeue))
			}
		})
	}
}

func fmtDur(d *time.Duration) string {
	if d == nil {
		return "none"
	}
	return d.String()
}
