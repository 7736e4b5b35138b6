package job_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/controllertest"
	"plainkube.dev/plainkube/internal/controller/job"
	"plainkube.dev/plainkube/pkg/testenv"
)

// startWithExits runs a control plane without nodes and the job
// controller (pod failure backoff 100 ms); the test stands in for the
// kubelet: every pod of the job named jobName that is not finished yet
// ends at once, its container exiting with exitCode(its completion index).
func startWithExits(t *testing.T, jobName string, exitCode func(index int) int32) kubernetes.Interface {
	t.Helper()
	env := testenv.Start(t)
	c, err := job.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.LoggerAt(t, slog.LevelInfo)
	c.PodFailureBackoff = 100 * time.Millisecond
	controllertest.Run(t, c, 2)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + jobName})
			if err != nil {
				continue
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
					continue
				}
				ix, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
				if err != nil {
					continue
				}
				code := exitCode(ix)
				now := metav1.Now()
				p.Status.Phase = corev1.PodSucceeded
				if code != 0 {
					p.Status.Phase = corev1.PodFailed
				}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "work", Image: "busybox:1.36",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, StartedAt: now, FinishedAt: now}}}}
				_, _ = cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
			}
		}
	}()
	return cs
}

func indexedPerIndexJob(name string, completions, parallelism, limit int32) *batchv1.Job {
	j := newJob(name, "", "")
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	j.Spec.Completions, j.Spec.Parallelism = ptr.To(completions), ptr.To(parallelism)
	j.Spec.BackoffLimitPerIndex = ptr.To(limit)
	return j
}

// podsByIndex are the job's pods' index failure counts, by index, in the
// order of the counts.
func podsByIndex(t *testing.T, cs kubernetes.Interface, j *batchv1.Job) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, p := range jobPods(t, cs, j) {
		ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		out[ix] = append(out[ix], p.Annotations[batchv1.JobIndexFailureCountAnnotation])
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

func checkFailed(t *testing.T, got *batchv1.Job, reason, message, failedIndexes, completedIndexes string, failed, succeeded int32) {
	t.Helper()
	if c := condition(got, batchv1.JobFailed); c == nil || c.Reason != reason || c.Message != message {
		t.Errorf("Failed condition %+v, want %s %q", c, reason, message)
	}
	if c := condition(got, batchv1.JobFailureTarget); c == nil || c.Reason != reason {
		t.Errorf("conditions %+v, want FailureTarget %s first", got.Status.Conditions, reason)
	}
	s := got.Status
	if ptr.Deref(s.FailedIndexes, "<nil>") != failedIndexes || s.CompletedIndexes != completedIndexes ||
		s.Failed != failed || s.Succeeded != succeeded || s.Active != 0 {
		t.Errorf("status: failedIndexes %q, completedIndexes %q, failed %d, succeeded %d, active %d; want %q, %q, %d, %d, 0",
			ptr.Deref(s.FailedIndexes, "<nil>"), s.CompletedIndexes, s.Failed, s.Succeeded, s.Active,
			failedIndexes, completedIndexes, failed, succeeded)
	}
}

// TestJobBackoffLimitPerIndex: odd indexes fail, even ones succeed; with
// one failure allowed per index, each odd index runs twice (its second
// pod annotated with one failure) and fails; the job fails with
// FailedIndexes once every index finished.
func TestJobBackoffLimitPerIndex(t *testing.T) {
	t.Parallel()
	cs := startWithExits(t, "odd", func(ix int) int32 { return int32(ix % 2) })
	j := create(t, cs, indexedPerIndexJob("odd", 4, 2, 1))
	if *j.Spec.BackoffLimit != 1<<31-1 || *j.Spec.PodReplacementPolicy != batchv1.TerminatingOrFailed {
		t.Errorf("defaults: backoffLimit %d, podReplacementPolicy %s", *j.Spec.BackoffLimit, *j.Spec.PodReplacementPolicy)
	}
	got := waitCondition(t, cs, "odd", batchv1.JobFailed, 30*time.Second)
	checkFailed(t, got, "FailedIndexes", "Job has failed indexes", "1,3", "0,2", 4, 2)
	want := map[string][]string{"0": {"0"}, "1": {"0", "1"}, "2": {"0"}, "3": {"0", "1"}}
	if got := podsByIndex(t, cs, j); !equalLists(got, want) {
		t.Errorf("failure counts by index %v, want %v", got, want)
	}
	waitEvent(t, cs, got, "FailedIndexes", "Job has failed indexes")
}

// TestJobFailIndexRule: a FailIndex rule fails index 1 at its first
// failure, though backoffLimitPerIndex allows more.
func TestJobFailIndexRule(t *testing.T) {
	t.Parallel()
	cs := startWithExits(t, "failindex", func(ix int) int32 { return int32(ix) })
	j := indexedPerIndexJob("failindex", 2, 2, 3)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:      batchv1.PodFailurePolicyActionFailIndex,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}},
	}}}
	j = create(t, cs, j)
	got := waitCondition(t, cs, "failindex", batchv1.JobFailed, 30*time.Second)
	checkFailed(t, got, "FailedIndexes", "Job has failed indexes", "1", "0", 1, 1)
	if got := podsByIndex(t, cs, j); len(got["1"]) != 1 {
		t.Errorf("index 1 ran %d pods, want 1", len(got["1"]))
	}
}

// TestJobMaxFailedIndexes: with maxFailedIndexes 0 the job fails at its
// first failed index; no other index runs.
func TestJobMaxFailedIndexes(t *testing.T) {
	t.Parallel()
	cs := startWithExits(t, "maxfailed", func(int) int32 { return 1 })
	j := indexedPerIndexJob("maxfailed", 4, 1, 0)
	j.Spec.MaxFailedIndexes = ptr.To[int32](0)
	j = create(t, cs, j)
	got := waitCondition(t, cs, "maxfailed", batchv1.JobFailed, 30*time.Second)
	checkFailed(t, got, "MaxFailedIndexesExceeded", "Job has exceeded the specified maximal number of failed indexes", "0", "", 1, 0)
	want := map[string][]string{"0": {"0"}}
	if got := podsByIndex(t, cs, j); !equalLists(got, want) {
		t.Errorf("failure counts by index %v, want %v", got, want)
	}
}

func equalLists(a, b map[string][]string) bool { return maps.EqualFunc(a, b, slices.Equal[[]string]) }
