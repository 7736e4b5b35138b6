package cronjob

import (
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nextScheduleDelta pads every wake-up, so that a clock a little behind
// still finds the scheduled time passed.
const nextScheduleDelta = 100 * time.Millisecond

// tooManyMissed is how many missed schedules are worth a warning.
const tooManyMissed = 100

// scheduleSpec is the schedule the controller parses for cj: spec.timeZone
// becomes a TZ= prefix (a schedule with its own TZ= or CRON_TZ= keeps
// it, and is reported as unsupported).
func scheduleSpec(cj *batchv1.CronJob) (spec string, tzInSchedule bool) {
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		return cj.Spec.Schedule, true
	}
	if cj.Spec.TimeZone != nil {
		if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
			return cj.Spec.Schedule, false
		}
		return fmt.Sprintf("TZ=%s %s", *cj.Spec.TimeZone, cj.Spec.Schedule), false
	}
	return cj.Spec.Schedule, false
}

// missed is how many schedules passed unmet.
type missed int

const (
	noneMissed missed = iota
	fewMissed
	manyMissed
)

// mostRecentScheduleTime returns the time schedules are counted from (the
// last schedule time, else the creation time — moved up to now less
// startingDeadlineSeconds when withDeadline), the most recent schedule
// time not after now that is after it (nil if none), and how many were
// missed. A schedule that never fires twice a second apart is an error.
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, sched Schedule, withDeadline bool) (time.Time, *time.Time, missed, error) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if withDeadline && cj.Spec.StartingDeadlineSeconds != nil {
		if d := now.Add(-time.Duration(*cj.Spec.StartingDeadlineSeconds) * time.Second); d.After(earliest) {
			earliest = d
		}
	}
	t1 := sched.Next(earliest)
	t2 := sched.Next(t1)
	if now.Before(t1) {
		return earliest, nil, noneMissed, nil
	}
	if now.Before(t2) {
		return earliest, &t1, noneMissed, nil
	}
	// Roughly how many periods fit between t1 and now; then walk the last
	// two of them to find the exact most recent time.
	period := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if period < 1 {
		return earliest, nil, noneMissed, fmt.Errorf("time difference between two schedules is less than 1 second")
	}
	n := int64(now.Sub(t1).Seconds())/period + 1
	var recent time.Time
	for t := sched.Next(t1.Add(time.Duration((n-2)*period) * time.Second)); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		recent = t
	}
	m := fewMissed
	if n > tooManyMissed {
		m = manyMissed
	}
	if recent.IsZero() {
		return earliest, nil, m, nil
	}
	return earliest, &recent, m, nil
}

// nextScheduleTime is the schedule time a job should be started for now:
// the most recent unmet one within the starting deadline, or nil.
func nextScheduleTime(cj *batchv1.CronJob, now time.Time, sched Schedule) (*time.Time, missed, error) {
	_, recent, m, err := mostRecentScheduleTime(cj, now, sched, true)
	if recent == nil || recent.After(now) {
		return nil, m, err
	}
	return recent, m, err
}

// nextRequeue is how long until the next schedule time after the last
// one (or after now, when schedules were missed), plus a small pad.
func nextRequeue(cj *batchv1.CronJob, now time.Time, sched Schedule) time.Duration {
	earliest, recent, m, err := mostRecentScheduleTime(cj, now, sched, false)
	switch {
	case err != nil:
		recent = &now
	case recent == nil && m == noneMissed:
		recent = &earliest
	case recent == nil:
		recent = &now
	}
	return sched.Next(*recent).Add(nextScheduleDelta).Sub(now)
}

// startDecision is what to do at a schedule time.
type startDecision int

const (
	// startJob: create the job.
	startJob startDecision = iota
	// replaceAndStart: delete the active jobs, then create the job
	// (concurrencyPolicy Replace).
	replaceAndStart
	// skipTooLate: the starting deadline passed (event MissSchedule).
	skipTooLate
	// skipProcessed: the job of this schedule time exists already.
	skipProcessed
	// skipForbidden: a job is active and concurrencyPolicy is Forbid
	// (event JobAlreadyActive).
	skipForbidden
)

// decideStart decides what the schedule time scheduled means for cj at
// now.
func decideStart(cj *batchv1.CronJob, scheduled, now time.Time) startDecision {
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		return skipTooLate
	}
	name := jobName(cj, scheduled)
	for _, ref := range cj.Status.Active {
		if ref.Name == name && ref.Namespace == cj.Namespace {
			return skipProcessed
		}
	}
	if cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Time.Equal(scheduled) {
		return skipProcessed
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			return skipForbidden
		}
	case batchv1.ReplaceConcurrent:
		if len(cj.Status.Active) > 0 {
			return replaceAndStart
		}
	}
	return startJob
}

// jobName is "<cronjob>-<scheduled time in minutes since the epoch>": the
// same for the same schedule time, so a job is never made twice.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}

// jobFromTemplate is the job cj starts for the schedule time scheduled:
// the template's labels, annotations and spec, the
// batch.kubernetes.io/cronjob-scheduled-timestamp annotation (RFC 3339, in
// spec.timeZone or UTC), and cj as its controller.
func jobFromTemplate(cj *batchv1.CronJob, scheduled time.Time) (*batchv1.Job, error) {
	tz := ""
	if cj.Spec.TimeZone != nil {
		tz = *cj.Spec.TimeZone
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Labels {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Annotations {
		annotations[k] = v
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name:              jobName(cj, scheduled),
		Namespace:         cj.Namespace,
		Labels:            labels,
		Annotations:       annotations,
		CreationTimestamp: metav1.Time{Time: scheduled},
		OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(cj, controllerKind)},
	}}
	cj.Spec.JobTemplate.Spec.DeepCopyInto(&j.Spec)
	return j, nil
}

// finishedType is Complete or Failed for a finished job, else "".
func finishedType(j *batchv1.Job) batchv1.JobConditionType {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

func isJobFinished(j *batchv1.Job) bool { return finishedType(j) != "" }

func inActiveList(cj *batchv1.CronJob, uid types.UID) bool {
	for _, r := range cj.Status.Active {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func deleteFromActiveList(cj *batchv1.CronJob, uid types.UID) {
	active := []corev1.ObjectReference{}
	for _, r := range cj.Status.Active {
		if r.UID != uid {
			active = append(active, r)
		}
	}
	cj.Status.Active = active
}

// jobsToClean are the finished jobs beyond the history limits: the
// oldest (by start time, then name) of the successful ones beyond
// successfulJobsHistoryLimit and of the failed ones beyond
// failedJobsHistoryLimit. A limit left unset keeps every job.
func jobsToClean(cj *batchv1.CronJob, jobs []*batchv1.Job) []*batchv1.Job {
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch finishedType(j) {
		case batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	var out []*batchv1.Job
	oldest := func(js []*batchv1.Job, limit *int32) {
		if limit == nil || len(js) <= int(*limit) {
			return
		}
		sort.Sort(byStartTime(js))
		out = append(out, js[:len(js)-int(*limit)]...)
	}
	oldest(succeeded, cj.Spec.SuccessfulJobsHistoryLimit)
	oldest(failed, cj.Spec.FailedJobsHistoryLimit)
	return out
}

// byStartTime orders jobs by status.startTime (unstarted last), then name.
type byStartTime []*batchv1.Job

func (o byStartTime) Len() int      { return len(o) }
func (o byStartTime) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byStartTime) Less(i, j int) bool {
	a, b := o[i].Status.StartTime, o[j].Status.StartTime
	if (a == nil) != (b == nil) {
		return a != nil
	}
	if a == nil || a.Equal(b) {
		return o[i].Name < o[j].Name
	}
	return a.Before(b)
}

// State is what the schedule decision of one sync looks at: the CronJob,
// its status already brought up to date from its Jobs, and the time.
type State struct {
	CronJob *batchv1.CronJob
	Now     time.Time
}

// Plan is the schedule decision of one sync: the events to record; the
// schedule time to start a Job for (nil: none), after deleting the active
// Jobs when ReplaceActive; and when to look again (nil: not by the
// schedule) — once the Job is started, when Start is set.
type Plan struct {
	Events        []plannedEvent
	TooManyMissed bool
	Start         *time.Time
	ReplaceActive bool
	RequeueAfter  *time.Duration
}

// plannedEvent is an event the plan records about the CronJob.
type plannedEvent struct{ Type, Reason, Message string }

// plan decides whether a CronJob starts a Job now: not while it is being
// deleted or suspended, or when its time zone or schedule is invalid;
// otherwise for the most recent unmet schedule time within the starting
// deadline, as its concurrencyPolicy allows.
func plan(st State) Plan {
	cj, now := st.CronJob, st.Now
	var p Plan
	event := func(typ, reason, format string, args ...any) {
		p.Events = append(p.Events, plannedEvent{typ, reason, fmt.Sprintf(format, args...)})
	}
	if cj.DeletionTimestamp != nil {
		return p
	}
	if tz := cj.Spec.TimeZone; tz != nil {
		if _, err := time.LoadLocation(*tz); err != nil {
			event(corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *tz, err)
			return p
		}
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return p
	}
	spec, tzInSchedule := scheduleSpec(cj)
	if tzInSchedule {
		event(corev1.EventTypeWarning, "UnsupportedSchedule", "CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", cj.Spec.Schedule)
	}
	sched, err := ParseSchedule(spec)
	if err != nil {
		event(corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return p
	}
	scheduled, m, err := nextScheduleTime(cj, now, sched)
	if m == manyMissed {
		event(corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
		p.TooManyMissed = true
	}
	if err != nil {
		event(corev1.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err)
		return p
	}
	requeue := func(cj *batchv1.CronJob) *time.Duration {
		d := nextRequeue(cj, now, sched)
		return &d
	}
	if scheduled == nil {
		p.RequeueAfter = requeue(cj)
		return p
	}
	switch decideStart(cj, *scheduled, now) {
	case skipTooLate:
		event(corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		p.RequeueAfter = requeue(cj)
		return p
	case skipProcessed:
		p.RequeueAfter = requeue(cj)
		return p
	case skipForbidden:
		event(corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
		p.RequeueAfter = requeue(cj)
		return p
	case replaceAndStart:
		p.ReplaceActive = true
	}
	p.Start = scheduled
	// The next look counts from this schedule time, once it is started.
	started := cj.DeepCopy()
	started.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	p.RequeueAfter = requeue(started)
	return p
}
