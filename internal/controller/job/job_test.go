package job_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/controllertest"
	"plainkube.dev/plainkube/internal/controller/job"
	"plainkube.dev/plainkube/pkg/testenv"
)

// start runs a control plane with the scheduler and two simulated nodes,
// and the job controller (configured by configure) until the test ends.
func start(t *testing.T, configure func(*job.Controller)) kubernetes.Interface {
	t.Helper()
	env := testenv.Start(t, testenv.WithScheduler(), testenv.WithSimNodes(2))
	c, err := job.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.LoggerAt(t, slog.LevelInfo)
	if configure != nil {
		configure(c)
	}
	controllertest.Run(t, c, 2)
	return kubernetes.NewForConfigOrDie(env.Config)
}

// eventually polls cond every 50 ms for up to timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	controllertest.EventuallyWithin(t, 50*time.Millisecond, timeout, what, cond)
}

// newJob is a job whose pods run on simulated nodes and exit after
// exitAfter with exitCode (never, if exitAfter is empty).
func newJob(name, exitAfter, exitCode string) *batchv1.Job {
	ann := map[string]string{"sim.plainkube.dev/stop-delay": "0s"}
	if exitAfter != "" {
		ann["sim.plainkube.dev/exit-after"] = exitAfter
		ann["sim.plainkube.dev/exit-code"] = exitCode
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: ann},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "work", Image: "busybox:1.36"}}},
		}},
	}
}

func create(t *testing.T, cs kubernetes.Interface, j *batchv1.Job) *batchv1.Job {
	t.Helper()
	out, err := cs.BatchV1().Jobs(j.Namespace).Create(context.Background(), j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func getJob(cs kubernetes.Interface, name string) (*batchv1.Job, error) {
	return cs.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
}

func condition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == t && j.Status.Conditions[i].Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func waitCondition(t *testing.T, cs kubernetes.Interface, name string, ct batchv1.JobConditionType, timeout time.Duration) *batchv1.Job {
	t.Helper()
	var got *batchv1.Job
	eventually(t, timeout, fmt.Sprintf("job %s to be %s", name, ct), func() (bool, error) {
		j, err := getJob(cs, name)
		if err != nil {
			return false, err
		}
		got = j
		return condition(j, ct) != nil, fmt.Errorf("status %+v", j.Status)
	})
	return got
}

func jobPods(t *testing.T, cs kubernetes.Interface, j *batchv1.Job) []corev1.Pod {
	t.Helper()
	l, err := cs.CoreV1().Pods(j.Namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: batchv1.ControllerUidLabel + "=" + string(j.UID)})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func eventReasons(t *testing.T, cs kubernetes.Interface, j *batchv1.Job) map[string]string {
	t.Helper()
	l, err := cs.CoreV1().Events(j.Namespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(j.UID)).String()})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range l.Items {
		out[e.Reason] = e.Message
	}
	return out
}

func waitEvent(t *testing.T, cs kubernetes.Interface, j *batchv1.Job, reason, message string) {
	t.Helper()
	eventually(t, 10*time.Second, "event "+reason, func() (bool, error) {
		got := eventReasons(t, cs, j)
		m, ok := got[reason]
		return ok && (message == "" || m == message), fmt.Errorf("events %v", got)
	})
}

// TestJobCompletes: a Job of 3 completions, 2 at a time, whose pods exit 0
// after a second, completes (issue #5).
func TestJobCompletes(t *testing.T) {
	t.Parallel()
	cs := start(t, nil)
	j := newJob("pi", "1s", "0")
	j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](2)
	j = create(t, cs, j)

	eventually(t, 10*time.Second, "2 active pods", func() (bool, error) {
		got, err := getJob(cs, "pi")
		return err == nil && got.Status.Active == 2 && got.Status.StartTime != nil, err
	})
	done := waitCondition(t, cs, "pi", batchv1.JobComplete, 30*time.Second)
	st := done.Status
	if st.Succeeded != 3 || st.Failed != 0 || st.Active != 0 || st.CompletionTime == nil || st.StartTime == nil {
		t.Errorf("status = %+v", st)
	}
	if !st.CompletionTime.After(st.StartTime.Time) && !st.CompletionTime.Equal(st.StartTime) {
		t.Errorf("completionTime %v before startTime %v", st.CompletionTime, st.StartTime)
	}
	if c := condition(done, batchv1.JobSuccessCriteriaMet); c == nil || c.Reason != "CompletionsReached" {
		t.Errorf("conditions = %+v, want SuccessCriteriaMet before Complete", st.Conditions)
	}
	if u := st.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
		t.Errorf("uncounted pods left: %+v", u)
	}
	if st.Ready == nil || *st.Ready != 0 || st.Terminating == nil || *st.Terminating != 0 {
		t.Errorf("ready %v terminating %v", st.Ready, st.Terminating)
	}
	pods := jobPods(t, cs, done)
	if len(pods) != 3 {
		t.Errorf("%d pods, want 3", len(pods))
	}
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		switch {
		case ref == nil || ref.UID != done.UID || ref.Kind != "Job" || !ptr.Deref(ref.BlockOwnerDeletion, false):
			t.Errorf("pod %s: controller %+v", p.Name, ref)
		case !strings.HasPrefix(p.Name, "pi-"):
			t.Errorf("pod name %s", p.Name)
		case p.Labels[batchv1.JobNameLabel] != "pi" || p.Labels["job-name"] != "pi":
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		case len(p.Finalizers) != 0:
			t.Errorf("pod %s still has finalizers %v", p.Name, p.Finalizers)
		case p.Status.Phase != corev1.PodSucceeded:
			t.Errorf("pod %s is %s", p.Name, p.Status.Phase)
		}
	}
	waitEvent(t, cs, done, "Completed", "Job completed")
	waitEvent(t, cs, done, "SuccessfulCreate", "")
}

// TestJobBackoffLimitExceeded: pods that exit 1 fail the job once more of
// them failed than backoffLimit allows.
func TestJobBackoffLimitExceeded(t *testing.T) {
	t.Parallel()
	cs := start(t, func(c *job.Controller) { c.PodFailureBackoff = 500 * time.Millisecond })
	j := newJob("fails", "1s", "1")
	j.Spec.BackoffLimit = ptr.To[int32](1)
	j = create(t, cs, j)

	failed := waitCondition(t, cs, "fails", batchv1.JobFailed, 30*time.Second)
	c := condition(failed, batchv1.JobFailed)
	if c.Reason != "BackoffLimitExceeded" || c.Message != "Job has reached the specified backoff limit" {
		t.Errorf("Failed condition %+v", c)
	}
	if ft := condition(failed, batchv1.JobFailureTarget); ft == nil || ft.Reason != "BackoffLimitExceeded" {
		t.Errorf("conditions %+v, want FailureTarget first", failed.Status.Conditions)
	}
	if failed.Status.Failed != 2 || failed.Status.Succeeded != 0 || failed.Status.Active != 0 || failed.Status.CompletionTime != nil {
		t.Errorf("status %+v", failed.Status)
	}
	for _, p := range jobPods(t, cs, failed) {
		if len(p.Finalizers) != 0 {
			t.Errorf("pod %s still has finalizers %v", p.Name, p.Finalizers)
		}
	}
	waitEvent(t, cs, failed, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
}

// TestJobSuspendResume: suspending a running job deletes its pods and sets
// JobSuspended; resuming starts them again.
func TestJobSuspendResume(t *testing.T) {
	t.Parallel()
	cs := start(t, nil)
	j := newJob("sleepy", "", "")
	j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](4), ptr.To[int32](2)
	j = create(t, cs, j)
	eventually(t, 10*time.Second, "2 ready pods", func() (bool, error) {
		got, err := getJob(cs, "sleepy")
		return err == nil && got.Status.Active == 2 && ptr.Deref(got.Status.Ready, 0) == 2, err
	})

	setSuspend(t, cs, "sleepy", true)
	eventually(t, 15*time.Second, "the job suspended with no pods", func() (bool, error) {
		got, err := getJob(cs, "sleepy")
		if err != nil {
			return false, err
		}
		c := condition(got, batchv1.JobSuspended)
		return c != nil && c.Reason == "JobSuspended" && got.Status.Active == 0 && ptr.Deref(got.Status.Terminating, -1) == 0 &&
			len(jobPods(t, cs, got)) == 0, fmt.Errorf("status %+v", got.Status)
	})
	suspended, _ := getJob(cs, "sleepy")
	if suspended.Status.Failed != 0 {
		t.Errorf("suspension counted failures: %+v", suspended.Status)
	}
	waitEvent(t, cs, j, "Suspended", "Job suspended")
	waitEvent(t, cs, j, "SuccessfulDelete", "")

	setSuspend(t, cs, "sleepy", false)
	eventually(t, 10*time.Second, "the job resumed", func() (bool, error) {
		got, err := getJob(cs, "sleepy")
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == batchv1.JobSuspended && c.Status == corev1.ConditionFalse && c.Reason == "JobResumed" {
				return got.Status.Active == 2, fmt.Errorf("status %+v", got.Status)
			}
		}
		return false, fmt.Errorf("status %+v", got.Status)
	})
	waitEvent(t, cs, j, "Resumed", "Job resumed")
}

func setSuspend(t *testing.T, cs kubernetes.Interface, name string, v bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"suspend":%t}}`, v)
	if _, err := cs.BatchV1().Jobs("default").Patch(context.Background(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestJobIndexed: an Indexed Job's pods carry their index and the job
// records the completed indexes.
func TestJobIndexed(t *testing.T) {
	t.Parallel()
	cs := start(t, nil)
	j := newJob("idx", "1s", "0")
	j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	j = create(t, cs, j)
	done := waitCondition(t, cs, "idx", batchv1.JobComplete, 30*time.Second)
	if done.Status.CompletedIndexes != "0-2" || done.Status.Succeeded != 3 {
		t.Errorf("status %+v", done.Status)
	}
	seen := map[string]bool{}
	for _, p := range jobPods(t, cs, done) {
		ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		seen[ix] = true
		if p.Labels[batchv1.JobCompletionIndexAnnotation] != ix || p.Spec.Hostname != "idx-"+ix || !strings.HasPrefix(p.Name, "idx-"+ix+"-") {
			t.Errorf("pod %s: index %q, labels %v, hostname %q", p.Name, ix, p.Labels, p.Spec.Hostname)
		}
	}
	if len(seen) != 3 {
		t.Errorf("indexes %v", seen)
	}
}

// TestJobDeadlineAndPolicy: activeDeadlineSeconds fails a job with
// DeadlineExceeded, a FailJob rule fails one with PodFailurePolicy, and
// ttlSecondsAfterFinished deletes a finished job.
func TestJobDeadlineAndPolicy(t *testing.T) {
	t.Parallel()
	cs := start(t, nil)

	slow := newJob("slow", "", "")
	slow.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
	slow = create(t, cs, slow)

	bad := newJob("bad", "1s", "42")
	bad.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:      batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
	}}}
	create(t, cs, bad)

	short := newJob("short", "1s", "0")
	short.Spec.TTLSecondsAfterFinished = ptr.To[int32](1)
	create(t, cs, short)

	got := waitCondition(t, cs, "slow", batchv1.JobFailed, 20*time.Second)
	if c := condition(got, batchv1.JobFailed); c.Reason != "DeadlineExceeded" || c.Message != "Job was active longer than specified deadline" {
		t.Errorf("Failed condition %+v", c)
	}
	if got.Status.Failed != 1 || got.Status.Active != 0 {
		t.Errorf("status %+v", got.Status)
	}
	waitEvent(t, cs, slow, "DeadlineExceeded", "Job was active longer than specified deadline")

	got = waitCondition(t, cs, "bad", batchv1.JobFailed, 20*time.Second)
	if c := condition(got, batchv1.JobFailed); c.Reason != "PodFailurePolicy" || !strings.Contains(c.Message, "failed with exit code 42 matching FailJob rule at index 0") {
		t.Errorf("Failed condition %+v", c)
	}

	// Without a garbage collector the foreground deletion is left
	// pending; it has started when the job has a deletionTimestamp.
	eventually(t, 20*time.Second, "the short job deleted after its TTL", func() (bool, error) {
		j, err := getJob(cs, "short")
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return j.DeletionTimestamp != nil && condition(j, batchv1.JobComplete) != nil, fmt.Errorf("status %+v", j.Status)
	})
}

// TestJobDeletedReleasesPods: the pods of a deleted job lose the tracking
// finalizer, so that they can go — whether the job is gone at once
// (background deletion: its pods are orphans) or waits for its dependents
// to be orphaned (it is being deleted).
func TestJobDeletedReleasesPods(t *testing.T) {
	t.Parallel()
	cs := start(t, nil)
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan} {
		name := strings.ToLower(string(policy))
		j := newJob(name, "", "")
		j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
		j = create(t, cs, j)
		eventually(t, 10*time.Second, "2 pods", func() (bool, error) {
			return len(jobPods(t, cs, j)) == 2, nil
		})
		if err := cs.BatchV1().Jobs("default").Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the pods' finalizers removed after a deletion with "+name, func() (bool, error) {
			pods := jobPods(t, cs, j)
			for _, p := range pods {
				if len(p.Finalizers) > 0 {
					return false, fmt.Errorf("pod %s finalizers %v", p.Name, p.Finalizers)
				}
			}
			return len(pods) == 2, nil
		})
	}
}
