// Package job is plainkube's Job controller, as upstream's job-controller,
// together with upstream's TTL-after-finished controller.
//
// It has the one shape of internal/controller, wired by its Builder (jobs
// are the primary kind, pods owned; pod events and status-only updates are
// batched for SyncBatchPeriod, 1 s): observe (apply.go: the job, its
// namespace's pods, its expectations and backoff → State), plan (plan.go:
// plan(State) Plan — claims, counts, whether it must stop, pods to delete
// or create with their indexes, when to look again — pure, table-tested
// in plan_test.go), apply (apply.go). A sync of an unfinished job
//
//  1. claims the pods of its namespace: pods it controls that its selector
//     matches, matching orphans it adopts (after a live GET shows the job
//     is not being deleted), pods it no longer matches it releases;
//  2. counts them (status.go, pure): active (neither terminal nor being
//     deleted), ready, terminating, and the succeeded and failed pods that
//     still carry the batch.kubernetes.io/job-tracking finalizer and so
//     are not counted yet; failures matching an Ignore rule of the
//     podFailurePolicy do not count;
//  3. decides whether the job must stop (pure): a FailJob rule matched, more
//     failures than backoffLimit (for restartPolicy OnFailure, as many
//     container restarts), activeDeadlineSeconds passed (the job is looked
//     at again when it will), too many failed indexes (see below), or an
//     Indexed Job's successPolicy is met — then it deletes the active pods;
//     otherwise it manages pods (unless its expectations of creates and
//     deletes are outstanding): a suspended job loses its active pods
//     (JobSuspended condition, events Suspended/Resumed, startTime reset on
//     resume), surplus pods are deleted least-far-along first, and missing
//     pods — up to parallelism and the completions left — are created from
//     the template in slow-start batches, after the pod failure backoff
//     (10 s doubling per consecutive failure, at most 6 min). Pods get the
//     tracking finalizer, a controller reference and generateName "<job>-";
//     an Indexed Job's pods get the lowest free indexes as the
//     batch.kubernetes.io/job-completion-index annotation and label,
//     JOB_COMPLETION_INDEX in their environment, hostname "<job>-<index>"
//     and generateName "<job>-<index>-". Deleted surplus or suspended pods
//     lose their finalizer first, so they are not counted as failures;
//  4. (after the writes, from how they went: trackStatus) tracks status as
//     upstream does, so that no pod is counted twice or
//     lost: finished pods are first written to
//     status.uncountedTerminatedPods (an Indexed Job's successes to
//     completedIndexes), together with an interim FailureTarget or
//     SuccessCriteriaMet condition; then their finalizers are removed; then
//     the removed ones move to status.succeeded/failed and, once no pod is
//     uncounted or terminating, the final Failed or Complete condition (and
//     completionTime) is written. status.active, ready, terminating and
//     startTime are kept up to date.
//
// Condition reasons and messages and events are upstream's:
// BackoffLimitExceeded "Job has reached the specified backoff limit",
// DeadlineExceeded "Job was active longer than specified deadline",
// FailedIndexes "Job has failed indexes", MaxFailedIndexesExceeded "Job
// has exceeded the specified maximal number of failed indexes",
// PodFailurePolicy, CompletionsReached, SuccessPolicy; events
// SuccessfulCreate, FailedCreate, SuccessfulDelete, FailedDelete,
// Completed, Suspended, Resumed, and a Warning with the failure reason.
//
// A finished job is left alone, except that with ttlSecondsAfterFinished
// it is deleted (propagation Foreground, the resourceVersion of a fresh
// copy as precondition) that long after it finished. Pods that still
// carry the tracking finalizer but whose job is gone or finished are
// handed to a second queue that removes it. Jobs whose spec.managedBy
// names another controller are not synced.
//
// An Indexed Job with backoffLimitPerIndex (perindex.go) counts failures
// per index, on its pods' batch.kubernetes.io/job-index-failure-count and
// job-index-ignored-failure-count annotations: a replacement pod carries
// its predecessor's counts plus its failure (the predecessor keeps its
// tracking finalizer until then), after a backoff of its own index. An
// index fails when a counted failure comes with backoffLimitPerIndex
// failures before it, or a pod matches a FailIndex rule; failed indexes go
// to status.failedIndexes as succeeded ones go to completedIndexes, and
// are not run again. The job fails (FailureTarget first) with
// MaxFailedIndexesExceeded once more indexes failed than maxFailedIndexes,
// or with FailedIndexes once every index succeeded or failed.
//
// Not supported: upstream's metrics.
//
// The controller's clock (Controller.Clock) drives every timestamp and
// every "look again at" delay (deadlines, backoff, TTLs); error retries use
// the queue's real-time rate limiter.
package job
