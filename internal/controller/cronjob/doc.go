// Package cronjob is plainkube's CronJob controller, as upstream's
// cronjob-controller (v2): it starts a Job at each time a CronJob's
// schedule names and keeps the CronJob's status and job history.
//
// The controller watches CronJobs and Jobs. A sync of one CronJob
//
//  1. deletes (in the background) its finished Jobs beyond
//     successfulJobsHistoryLimit and failedJobsHistoryLimit, oldest first;
//  2. updates status from the Jobs it controls: finished Jobs leave
//     status.active (event SawCompletedJob), the latest completionTime of
//     a successful one is lastSuccessfulTime, active Jobs that no longer
//     exist leave status.active (MissingJob), unfinished Jobs it does not
//     list are reported (UnexpectedJob) — after checking a live copy, as
//     the cache is usually just behind the controller's own status write;
//  3. unless the CronJob is suspended or being deleted, finds the most
//     recent schedule time not yet started (after lastScheduleTime or the
//     creation time, and within startingDeadlineSeconds) and, following
//     concurrencyPolicy (Allow; Forbid: skip while a Job is active; Replace:
//     delete the active Jobs first), creates the Job
//     "<cronjob>-<scheduled time in minutes since the epoch>" from the job
//     template, controlled by the CronJob and annotated
//     batch.kubernetes.io/cronjob-scheduled-timestamp (RFC 3339, in
//     spec.timeZone or UTC); it adds the Job to status.active and sets
//     lastScheduleTime (event SuccessfulCreate);
//  4. writes the status once, and looks again at the next schedule time
//     (plus 100 ms).
//
// Schedules are parsed by ParseSchedule (schedule.go), a small
// re-implementation of the cron library upstream uses: five fields or a
// descriptor (@hourly, @every 1h, …), with spec.timeZone or a TZ=/CRON_TZ=
// prefix (reported with the UnsupportedSchedule event, as upstream).
// Events and their messages are upstream's.
//
// The decisions — next schedule times, whether to start, skip or replace
// (plan(State) Plan), the Job made from the template, which Jobs to clean
// up — are pure functions (plan.go) with table tests (plan_test.go);
// sync.go observes and applies. The
// controller's clock (Controller.Clock) decides when schedules are due
// and drives the delays before a CronJob is looked at again, so a test
// with a fake clock steps through minutes at once.
package cronjob
