package job

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// perIndexJob is an Indexed Job of 4 completions, 2 at a time, each index
// allowed limit failures.
func perIndexJob(limit int32, mutate ...func(*batchv1.Job)) *batchv1.Job {
	return testJob(append([]func(*batchv1.Job){func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions = ptr.To[int32](4)
		j.Spec.BackoffLimitPerIndex = ptr.To(limit)
		j.Spec.BackoffLimit = ptr.To[int32](1 << 30)
		j.Status.StartTime = &metav1.Time{Time: t0.Add(-time.Hour)}
	}}, mutate...)...)
}

// failures sets the pod's index failure counts.
func failures(counted, ignored int) podOpt {
	return func(p *corev1.Pod) {
		p.Annotations[batchv1.JobIndexFailureCountAnnotation] = fmt.Sprint(counted)
		if ignored > 0 {
			p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = fmt.Sprint(ignored)
		}
	}
}

func failedIndexesStatus(s string) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Status.FailedIndexes = &s }
}

func withRules(rules ...batchv1.PodFailurePolicyRule) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules} }
}

func onExit(action batchv1.PodFailurePolicyAction, code int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{code}}}
}

func TestPerIndexFailedIndexes(t *testing.T) {
	tests := []struct {
		name   string
		job    *batchv1.Job
		pods   []*corev1.Pod
		failed string
		// lastFailed are the pods awaiting replacement, by index.
		lastFailed map[int]string
	}{
		{name: "a first failure below the limit awaits its replacement", job: perIndexJob(1),
			pods:       []*corev1.Pod{testPod("i1", corev1.PodFailed, index(1), failures(0, 0))},
			lastFailed: map[int]string{1: "i1"}},
		{name: "the failure reaching the limit fails the index", job: perIndexJob(1),
			pods:   []*corev1.Pod{testPod("i1", corev1.PodFailed, index(1), failures(1, 0))},
			failed: "1"},
		{name: "limit 0: the first failure fails the index", job: perIndexJob(0),
			pods:   []*corev1.Pod{testPod("i1", corev1.PodFailed, index(1), failures(0, 0)), testPod("i2", corev1.PodFailed, index(2))},
			failed: "1,2"},
		{name: "ignored failures do not count", job: perIndexJob(1, withRules(onExit(batchv1.PodFailurePolicyActionIgnore, 3))),
			pods:       []*corev1.Pod{testPod("i1", corev1.PodFailed, index(1), failures(0, 5), exited(3, t0))},
			lastFailed: map[int]string{1: "i1"}},
		{name: "a FailIndex rule fails the index at once", job: perIndexJob(3, withRules(onExit(batchv1.PodFailurePolicyActionFailIndex, 1))),
			pods:   []*corev1.Pod{testPod("i1", corev1.PodFailed, index(1), failures(0, 0), exited(1, t0))},
			failed: "1"},
		{name: "failed indexes of the status stay; counted pods do not add", job: perIndexJob(0, failedIndexesStatus("0")),
			pods:   []*corev1.Pod{testPod("i2", corev1.PodFailed, index(2), noFinalizer)},
			failed: "0"},
		{name: "no pod awaits replacement where the index runs or succeeded", job: perIndexJob(2),
			pods: []*corev1.Pod{testPod("f0", corev1.PodFailed, index(0)), testPod("r0", corev1.PodRunning, index(0), failures(1, 0)),
				testPod("f1", corev1.PodFailed, index(1)), testPod("s1", corev1.PodSucceeded, index(1), failures(1, 0))}},
		{name: "the pod with the most failures awaits replacement", job: perIndexJob(5),
			pods: []*corev1.Pod{testPod("f1a", corev1.PodFailed, index(1), failures(1, 0), exited(1, t0)),
				testPod("f1b", corev1.PodFailed, index(1), failures(0, 0), exited(1, t0.Add(-time.Minute)))},
			lastFailed: map[int]string{1: "f1a"}},
		{name: "malformed counts read as 0", job: perIndexJob(1),
			pods: []*corev1.Pod{testPod("i1", corev1.PodFailed, index(1), func(p *corev1.Pod) {
				p.Annotations[batchv1.JobIndexFailureCountAnnotation] = "-4"
			})},
			lastFailed: map[int]string{1: "i1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newSyncState(tt.job, tt.pods, nil)
			if got := st.failedIndexes.String(); got != tt.failed {
				t.Errorf("failed indexes %q, want %q", got, tt.failed)
			}
			got := map[int]string{}
			for ix, p := range st.lastFailed {
				got[ix] = p.Name
			}
			if d := cmp.Diff(tt.lastFailed, got, cmp.Comparer(func(a, b map[int]string) bool { return fmt.Sprint(a) == fmt.Sprint(b) })); d != "" {
				t.Errorf("last failed (-want +got):\n%s", d)
			}
		})
	}
}

func TestPerIndexDecideFinished(t *testing.T) {
	failedTarget := func(reason, msg string) *batchv1.JobCondition {
		return newCondition(batchv1.JobFailureTarget, reason, msg, t0)
	}
	tests := []struct {
		name string
		job  *batchv1.Job
		pods []*corev1.Pod
		want *batchv1.JobCondition
	}{
		{name: "an index failed, others still to run", job: perIndexJob(0),
			pods: []*corev1.Pod{testPod("f1", corev1.PodFailed, index(1)), testPod("s0", corev1.PodSucceeded, index(0))}},
		{name: "every index finished, some failed", job: perIndexJob(0, failedIndexesStatus("1")),
			pods: []*corev1.Pod{testPod("f3", corev1.PodFailed, index(3)), testPod("s0", corev1.PodSucceeded, index(0)),
				testPod("s2", corev1.PodSucceeded, index(2))},
			want: failedTarget("FailedIndexes", "Job has failed indexes")},
		{name: "more failed indexes than maxFailedIndexes", job: perIndexJob(0, func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr.To[int32](1) }),
			pods: []*corev1.Pod{testPod("f1", corev1.PodFailed, index(1)), testPod("f2", corev1.PodFailed, index(2))},
			want: failedTarget("MaxFailedIndexesExceeded", "Job has exceeded the specified maximal number of failed indexes")},
		{name: "as many failed indexes as maxFailedIndexes", job: perIndexJob(0, func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr.To[int32](1) }),
			pods: []*corev1.Pod{testPod("f1", corev1.PodFailed, index(1))}},
		{name: "maxFailedIndexes 0: the first failed index", job: perIndexJob(0, func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr.To[int32](0) }),
			pods: []*corev1.Pod{testPod("f0", corev1.PodFailed, index(0)), testPod("r1", corev1.PodRunning, index(1))},
			want: failedTarget("MaxFailedIndexesExceeded", "Job has exceeded the specified maximal number of failed indexes")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newSyncState(tt.job, tt.pods, nil)
			st.decideFinished(t0)
			if d := cmp.Diff(tt.want, st.finished); d != "" {
				t.Errorf("finished (-want +got):\n%s", d)
			}
		})
	}
}

func TestPerIndexPlanManage(t *testing.T) {
	base, maxDelay := 10*time.Second, time.Minute
	tests := []struct {
		name string
		job  *batchv1.Job
		pods []*corev1.Pod
		// jobBackoff is the job-wide backoff, ignored with
		// backoffLimitPerIndex.
		jobBackoff time.Duration
		want       managePlan
	}{
		{name: "first pods have no failures", job: perIndexJob(1), jobBackoff: time.Hour,
			want: managePlan{create: 2, indexes: []int{0, 1}, failureCounts: []indexFailureCounts{{}, {}}}},
		{name: "failed indexes are not run again", job: perIndexJob(1, failedIndexesStatus("0,2")),
			pods: []*corev1.Pod{testPod("s1", corev1.PodSucceeded, index(1))},
			want: managePlan{create: 1, indexes: []int{3}, failureCounts: []indexFailureCounts{{}}}},
		{name: "a replacement carries the counts once the index backoff passed", job: perIndexJob(3),
			pods: []*corev1.Pod{testPod("f0", corev1.PodFailed, index(0), failures(1, 0), exited(1, t0.Add(-20*time.Second))),
				testPod("r1", corev1.PodRunning, index(1))},
			want: managePlan{create: 1, indexes: []int{0}, failureCounts: []indexFailureCounts{{counted: 2}}}},
		{name: "ignored failures add to the ignored count", job: perIndexJob(3, withRules(onExit(batchv1.PodFailurePolicyActionIgnore, 3))),
			pods: []*corev1.Pod{testPod("f0", corev1.PodFailed, index(0), failures(1, 0), exited(3, t0.Add(-time.Hour))),
				testPod("r1", corev1.PodRunning, index(1))},
			want: managePlan{create: 1, indexes: []int{0}, failureCounts: []indexFailureCounts{{counted: 1, ignored: 1}}}},
		{name: "an index in backoff waits (2 failures: 20 s from its finish)", job: perIndexJob(3),
			pods: []*corev1.Pod{testPod("f0", corev1.PodFailed, index(0), failures(1, 0), exited(1, t0.Add(-5*time.Second))),
				testPod("r1", corev1.PodRunning, index(1))},
			want: managePlan{wait: 15 * time.Second}},
		{name: "indexes not in backoff go ahead of one that is", job: perIndexJob(3, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](3) }),
			pods: []*corev1.Pod{testPod("f0", corev1.PodFailed, index(0), failures(0, 0), exited(1, t0.Add(-time.Second)))},
			want: managePlan{create: 2, indexes: []int{1, 2}, failureCounts: []indexFailureCounts{{}, {}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newSyncState(tt.job, tt.pods, nil)
			got := st.planManage(tt.jobBackoff, t0, base, maxDelay)
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(managePlan{}, indexFailureCounts{})); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

func TestPerIndexTrackPods(t *testing.T) {
	job := perIndexJob(1, failedIndexesStatus(""))
	pods := []*corev1.Pod{
		testPod("wait1", corev1.PodFailed, index(1), failures(0, 0)), // awaits its replacement
		testPod("fail2", corev1.PodFailed, index(2), failures(1, 0)), // fails index 2
		testPod("ok0", corev1.PodSucceeded, index(0), failures(0, 0)),
		testPod("run3", corev1.PodRunning, index(3), failures(0, 0)),
	}
	st := newSyncState(job, pods, nil)
	st.decideFinished(t0)
	if st.finished != nil {
		t.Fatalf("finished %+v", st.finished)
	}
	tr := st.trackPods(t0, false)
	rm := names(tr.removeFinalizer)
	sort.Strings(rm)
	if !slices.Equal(rm, []string{"fail2", "ok0"}) {
		t.Errorf("finalizers removed from %v, want fail2 and ok0", rm)
	}
	if got := ptr.Deref(job.Status.FailedIndexes, "<nil>"); got != "2" || job.Status.CompletedIndexes != "0" || !tr.needsFlush {
		t.Errorf("failedIndexes %q, completedIndexes %q, flush %v", got, job.Status.CompletedIndexes, tr.needsFlush)
	}
	if !slices.Equal(job.Status.UncountedTerminatedPods.Failed, []types.UID{"fail2"}) {
		t.Errorf("uncounted failed %v", job.Status.UncountedTerminatedPods.Failed)
	}

	// Once the job fails, the waiting pod is let go and counted too.
	job = perIndexJob(1, failedIndexesStatus("2,3"), func(j *batchv1.Job) { j.Status.CompletedIndexes = "0" })
	job.Spec.MaxFailedIndexes = ptr.To[int32](1)
	st = newSyncState(job, pods[:1], nil)
	st.decideFinished(t0)
	if st.finished == nil || st.finished.Reason != batchv1.JobReasonMaxFailedIndexesExceeded {
		t.Fatalf("finished %+v, want MaxFailedIndexesExceeded", st.finished)
	}
	tr = st.trackPods(t0, false)
	if got := names(tr.removeFinalizer); !slices.Equal(got, []string{"wait1"}) {
		t.Errorf("finalizers removed from %v, want wait1", got)
	}
	if c := findCondition(job.Status.Conditions, batchv1.JobFailureTarget); c == nil || c.Message != msgMaxFailedIndexesExceeded {
		t.Errorf("conditions %+v", job.Status.Conditions)
	}
}

func TestNewPodFailureCounts(t *testing.T) {
	job := perIndexJob(1)
	p, err := newPod(job, podTemplate(job), 1)
	if err != nil {
		t.Fatal(err)
	}
	setFailureCounts(p, indexFailureCounts{counted: 1})
	if p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "1" {
		t.Errorf("annotations %v", p.Annotations)
	}
	if _, ok := p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation]; ok {
		t.Errorf("an ignored count of 0 is written: %v", p.Annotations)
	}
	setFailureCounts(p, indexFailureCounts{counted: 0, ignored: 2})
	if p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" || p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] != "2" {
		t.Errorf("annotations %v", p.Annotations)
	}
}
