package job

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testJob(mutate ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "job-uid"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](3), BackoffLimit: ptr.To[int32](6),
			CompletionMode: ptr.To(batchv1.NonIndexedCompletion),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "job-uid"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{batchv1.ControllerUidLabel: "job-uid", batchv1.JobNameLabel: "pi"}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
		Status: batchv1.JobStatus{UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{}},
	}
	for _, m := range mutate {
		m(j)
	}
	return j
}

type podOpt func(*corev1.Pod)

func testPod(name string, phase corev1.PodPhase, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
			Finalizers:        []string{batchv1.JobTrackingFinalizer},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Minute))},
		Status: corev1.PodStatus{Phase: phase},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func noFinalizer(p *corev1.Pod) { p.Finalizers = nil }
func deleting(p *corev1.Pod)    { p.DeletionTimestamp = &metav1.Time{Time: t0} }
func onNode(p *corev1.Pod)      { p.Spec.NodeName = "n1" }
func index(i int) podOpt        { return func(p *corev1.Pod) { setIndex(p, i) } }
func setIndex(p *corev1.Pod, i int) {
	p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(i)}
}
func created(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(d)) }
}
func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
}
func exited(code int32, at time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(at)}}}}
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestNewSyncStateCounts(t *testing.T) {
	ignoreExit3 := func(j *batchv1.Job) {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:      batchv1.PodFailurePolicyActionIgnore,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3}},
		}}}
	}
	tests := []struct {
		name                       string
		job                        *batchv1.Job
		pods                       []*corev1.Pod
		expectedRm                 map[types.UID]bool
		active, ready, terminating int32
		newSucceeded, newFailed    []string
		succeeded, failed          int32
	}{
		{name: "fresh pods", job: testJob(),
			pods:   []*corev1.Pod{testPod("a", corev1.PodPending), testPod("b", corev1.PodRunning, ready)},
			active: 2, ready: 1},
		{name: "finished pods with finalizers are new", job: testJob(func(j *batchv1.Job) { j.Status.Succeeded, j.Status.Failed = 1, 2 }),
			pods:         []*corev1.Pod{testPod("s", corev1.PodSucceeded), testPod("f", corev1.PodFailed), testPod("old", corev1.PodSucceeded, noFinalizer)},
			newSucceeded: []string{"s"}, newFailed: []string{"f"}, succeeded: 2, failed: 3},
		{name: "uncounted pods are counted once", job: testJob(func(j *batchv1.Job) {
			j.Status.UncountedTerminatedPods.Succeeded = []types.UID{"s"}
			j.Status.UncountedTerminatedPods.Failed = []types.UID{"gone"}
		}),
			pods:      []*corev1.Pod{testPod("s", corev1.PodSucceeded)},
			succeeded: 1, failed: 1},
		{name: "finalizer removal expected: already counted", job: testJob(func(j *batchv1.Job) { j.Status.Succeeded = 1 }),
			pods: []*corev1.Pod{testPod("s", corev1.PodSucceeded)}, expectedRm: map[types.UID]bool{"s": true},
			succeeded: 1},
		{name: "a pod being deleted is terminating and failed", job: testJob(),
			pods:        []*corev1.Pod{testPod("d", corev1.PodRunning, deleting)},
			terminating: 1, newFailed: []string{"d"}, failed: 1},
		{name: "with podReplacementPolicy Failed a deleted pod fails only when Failed",
			job:         testJob(func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) }),
			pods:        []*corev1.Pod{testPod("d", corev1.PodRunning, deleting)},
			terminating: 1},
		{name: "ignored failures are not counted", job: testJob(ignoreExit3),
			pods:      []*corev1.Pod{testPod("f3", corev1.PodFailed, exited(3, t0)), testPod("f1", corev1.PodFailed, exited(1, t0))},
			newFailed: []string{"f3", "f1"}, failed: 1},
		{name: "indexed: succeeded is the number of indexes",
			job: testJob(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Status.CompletedIndexes = "0"
				j.Status.Succeeded = 1
			}),
			pods: []*corev1.Pod{testPod("i1", corev1.PodSucceeded, index(1)), testPod("i1b", corev1.PodSucceeded, index(1)),
				testPod("i9", corev1.PodSucceeded, index(9)), testPod("none", corev1.PodSucceeded)},
			newSucceeded: []string{"i1", "i1b"}, succeeded: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newSyncState(tt.job, tt.pods, tt.expectedRm)
			got := []int32{st.active, st.ready, st.terminating, st.succeeded, st.failed}
			want := []int32{tt.active, tt.ready, tt.terminating, tt.succeeded, tt.failed}
			if !slices.Equal(got, want) {
				t.Errorf("active, ready, terminating, succeeded, failed = %v, want %v", got, want)
			}
			if d := cmp.Diff(tt.newSucceeded, names(st.newSucceeded)); d != "" {
				t.Errorf("newSucceeded (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.newFailed, names(st.newFailed)); d != "" {
				t.Errorf("newFailed (-want +got):\n%s", d)
			}
		})
	}
}

func TestDecideFinished(t *testing.T) {
	started := func(ago time.Duration) func(*batchv1.Job) {
		return func(j *batchv1.Job) { j.Status.StartTime = &metav1.Time{Time: t0.Add(-ago)} }
	}
	withCondition := func(ct batchv1.JobConditionType, reason, msg string) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Status.Conditions = append(j.Status.Conditions, *newCondition(ct, reason, msg, t0.Add(-time.Minute)))
		}
	}
	failJobOn42 := func(j *batchv1.Job) {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:      batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
		}}}
	}
	tests := []struct {
		name       string
		job        *batchv1.Job
		pods       []*corev1.Pod
		want       *batchv1.JobCondition
		deadlineIn time.Duration
	}{
		{name: "running", job: testJob(started(time.Minute)), pods: []*corev1.Pod{testPod("a", corev1.PodRunning)}},
		{name: "failures up to the limit are fine",
			job:  testJob(started(time.Minute), func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](1) }),
			pods: []*corev1.Pod{testPod("f1", corev1.PodFailed)}},
		{name: "more failures than the limit",
			job:  testJob(started(time.Minute), func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](1) }),
			pods: []*corev1.Pod{testPod("f1", corev1.PodFailed), testPod("f2", corev1.PodFailed)},
			want: newCondition(batchv1.JobFailureTarget, "BackoffLimitExceeded", "Job has reached the specified backoff limit", t0)},
		{name: "OnFailure restarts reach the limit",
			job: testJob(started(time.Minute), func(j *batchv1.Job) {
				j.Spec.BackoffLimit = ptr.To[int32](2)
				j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			}),
			pods: []*corev1.Pod{testPod("r", corev1.PodRunning, func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 2}}
			})},
			want: newCondition(batchv1.JobFailureTarget, "BackoffLimitExceeded", "Job has reached the specified backoff limit", t0)},
		{name: "deadline ahead", job: testJob(started(20*time.Second), func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) }),
			deadlineIn: 10 * time.Second},
		{name: "deadline passed", job: testJob(started(30*time.Second), func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) }),
			want: newCondition(batchv1.JobFailureTarget, "DeadlineExceeded", "Job was active longer than specified deadline", t0)},
		{name: "no deadline while suspended",
			job: testJob(started(time.Hour), func(j *batchv1.Job) {
				j.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
				j.Spec.Suspend = ptr.To(true)
			})},
		{name: "FailJob rule", job: testJob(started(time.Minute), failJobOn42),
			pods: []*corev1.Pod{testPod("f", corev1.PodFailed, exited(42, t0))},
			want: newCondition(batchv1.JobFailureTarget, "PodFailurePolicy", "Container c for pod default/f failed with exit code 42 matching FailJob rule at index 0", t0)},
		{name: "a FailureTarget becomes Failed",
			job:  testJob(started(time.Minute), withCondition(batchv1.JobFailureTarget, "BackoffLimitExceeded", "Job has reached the specified backoff limit")),
			want: newCondition(batchv1.JobFailed, "BackoffLimitExceeded", "Job has reached the specified backoff limit", t0)},
		{name: "SuccessCriteriaMet stands",
			job: testJob(started(time.Minute), withCondition(batchv1.JobSuccessCriteriaMet, "CompletionsReached", msgCompletionsReached),
				func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](0) }),
			pods: []*corev1.Pod{testPod("f1", corev1.PodFailed)},
			want: newCondition(batchv1.JobSuccessCriteriaMet, "CompletionsReached", msgCompletionsReached, t0.Add(-time.Minute))},
		{name: "success policy of an Indexed Job",
			job: testJob(started(time.Minute), func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
					{SucceededIndexes: ptr.To("2")}, {SucceededIndexes: ptr.To("0-1")}}}
			}),
			pods: []*corev1.Pod{testPod("i0", corev1.PodSucceeded, index(0)), testPod("i1", corev1.PodSucceeded, index(1))},
			want: newCondition(batchv1.JobSuccessCriteriaMet, "SuccessPolicy", "Matched rules at index 1", t0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newSyncState(tt.job, tt.pods, nil)
			d := st.decideFinished(t0)
			if diff := cmp.Diff(tt.want, st.finished); diff != "" {
				t.Errorf("finished (-want +got):\n%s", diff)
			}
			if d != tt.deadlineIn {
				t.Errorf("deadlineIn = %v, want %v", d, tt.deadlineIn)
			}
		})
	}
}

func TestWantActive(t *testing.T) {
	tests := []struct {
		completions                       *int32
		parallelism, succeeded, active, w int32
	}{
		{completions: ptr.To[int32](3), parallelism: 2, w: 2},
		{completions: ptr.To[int32](3), parallelism: 2, succeeded: 2, w: 1},
		{completions: ptr.To[int32](3), parallelism: 2, succeeded: 4, w: 0},
		{completions: nil, parallelism: 3, w: 3},
		{completions: nil, parallelism: 3, succeeded: 1, active: 2, w: 2},
		{completions: ptr.To[int32](5), parallelism: 0, w: 0},
	}
	for _, tt := range tests {
		j := testJob(func(j *batchv1.Job) { j.Spec.Completions, j.Spec.Parallelism = tt.completions, &tt.parallelism })
		if got := wantActive(j, tt.succeeded, tt.active); got != tt.w {
			t.Errorf("wantActive(completions %v, parallelism %d, succeeded %d, active %d) = %d, want %d",
				ptr.Deref(tt.completions, -1), tt.parallelism, tt.succeeded, tt.active, got, tt.w)
		}
	}
}

func TestPlanManage(t *testing.T) {
	indexed := func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) }
	tests := []struct {
		name    string
		job     *batchv1.Job
		pods    []*corev1.Pod
		backoff time.Duration
		want    managePlan
		delete  []string
	}{
		{name: "create up to parallelism", job: testJob(), want: managePlan{create: 2}},
		{name: "no more than completions left", job: testJob(),
			pods: []*corev1.Pod{testPod("s1", corev1.PodSucceeded), testPod("s2", corev1.PodSucceeded)}, want: managePlan{create: 1}},
		{name: "backoff holds creates", job: testJob(), pods: []*corev1.Pod{testPod("f", corev1.PodFailed)},
			backoff: 10 * time.Second, want: managePlan{wait: 10 * time.Second}},
		{name: "surplus pods go, least far along first",
			job: testJob(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](1) }),
			pods: []*corev1.Pod{testPod("running", corev1.PodRunning, onNode, ready), testPod("pending", corev1.PodPending, onNode),
				testPod("unscheduled", corev1.PodPending)},
			delete: []string{"unscheduled", "pending"}},
		{name: "suspended: every active pod goes", job: testJob(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }),
			pods:   []*corev1.Pod{testPod("a", corev1.PodRunning, onNode), testPod("done", corev1.PodSucceeded)},
			delete: []string{"a"}},
		{name: "terminating pods are replaced at once by default", job: testJob(),
			pods: []*corev1.Pod{testPod("t", corev1.PodRunning, deleting), testPod("a", corev1.PodRunning)}, want: managePlan{create: 1}},
		{name: "...but not with podReplacementPolicy Failed",
			job:  testJob(func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) }),
			pods: []*corev1.Pod{testPod("t", corev1.PodRunning, deleting), testPod("a", corev1.PodRunning)}},
		{name: "indexed: the lowest free indexes",
			job:  testJob(indexed, func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](5) }),
			pods: []*corev1.Pod{testPod("i0", corev1.PodSucceeded, index(0)), testPod("i1", corev1.PodRunning, index(1))},
			want: managePlan{create: 1, indexes: []int{2}}},
		{name: "indexed: duplicates and pods without an index go",
			job: testJob(indexed),
			pods: []*corev1.Pod{testPod("i0", corev1.PodRunning, index(0), onNode, created(-time.Hour)), testPod("i0new", corev1.PodRunning, index(0), onNode),
				testPod("none", corev1.PodRunning, onNode)},
			delete: []string{"none", "i0new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newSyncState(tt.job, tt.pods, nil)
			got := st.planManage(tt.backoff, t0, DefaultPodFailureBackoff, DefaultMaxPodFailureBackoff)
			if d := cmp.Diff(tt.delete, names(got.delete)); d != "" {
				t.Errorf("delete (-want +got):\n%s", d)
			}
			got.delete = nil
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(managePlan{})); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	delays := []struct {
		failures int32
		want     time.Duration
	}{{1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {6, 320 * time.Second}, {7, 6 * time.Minute}, {30, 6 * time.Minute}}
	for _, d := range delays {
		if got := backoffDelay(d.failures, DefaultPodFailureBackoff, DefaultMaxPodFailureBackoff); got != d.want {
			t.Errorf("backoffDelay(%d) = %v, want %v", d.failures, got, d.want)
		}
	}

	failedAt := func(name string, d time.Duration) *corev1.Pod {
		return testPod(name, corev1.PodFailed, exited(1, t0.Add(d)))
	}
	succeededAt := func(name string, d time.Duration) *corev1.Pod {
		return testPod(name, corev1.PodSucceeded, exited(0, t0.Add(d)))
	}
	at := func(d time.Duration) *time.Time { t := t0.Add(d); return &t }
	records := []struct {
		name              string
		old               backoffRecord
		succeeded, failed []*corev1.Pod
		want              backoffRecord
	}{
		{name: "nothing new", old: backoffRecord{1, at(0)}, want: backoffRecord{1, at(0)}},
		{name: "failures add up", old: backoffRecord{1, at(0)}, failed: []*corev1.Pod{failedAt("b", 5*time.Second), failedAt("a", 2*time.Second)},
			want: backoffRecord{3, at(5 * time.Second)}},
		{name: "a success resets", old: backoffRecord{4, at(0)}, succeeded: []*corev1.Pod{succeededAt("s", time.Second)}},
		{name: "failures after the last success count",
			old:       backoffRecord{4, at(0)},
			succeeded: []*corev1.Pod{succeededAt("s", 3*time.Second)},
			failed:    []*corev1.Pod{failedAt("f1", 2*time.Second), failedAt("f2", 4*time.Second), failedAt("f3", 5*time.Second)},
			want:      backoffRecord{2, at(5 * time.Second)}},
	}
	for _, r := range records {
		got := nextBackoff(r.old, r.succeeded, r.failed)
		if d := cmp.Diff(r.want, got, cmp.AllowUnexported(backoffRecord{})); d != "" {
			t.Errorf("%s: nextBackoff (-want +got):\n%s", r.name, d)
		}
	}

	rec := backoffRecord{failuresAfterLastSuccess: 2, lastFailureTime: at(0)}
	if got := rec.remaining(t0.Add(5*time.Second), DefaultPodFailureBackoff, DefaultMaxPodFailureBackoff); got != 15*time.Second {
		t.Errorf("remaining = %v, want 15s", got)
	}
	if got := rec.remaining(t0.Add(time.Minute), DefaultPodFailureBackoff, DefaultMaxPodFailureBackoff); got != 0 {
		t.Errorf("remaining after the delay = %v, want 0", got)
	}
}

// TestTrackToCompletion walks the status of a job whose three pods
// succeeded through the two writes of a sync: the pods are recorded as
// uncounted with SuccessCriteriaMet, then counted once their finalizers
// are gone, and the job is Complete.
func TestTrackToCompletion(t *testing.T) {
	job := testJob(func(j *batchv1.Job) { j.Status.StartTime = &metav1.Time{Time: t0.Add(-time.Minute)} })
	pods := []*corev1.Pod{testPod("a", corev1.PodSucceeded), testPod("b", corev1.PodSucceeded), testPod("c", corev1.PodSucceeded)}
	st := newSyncState(job, pods, nil)
	st.decideFinished(t0)
	if st.finished != nil {
		t.Fatalf("finished early: %v", st.finished)
	}
	if !isComplete(job, st.succeeded, st.active) {
		t.Fatalf("not complete with %d succeeded", st.succeeded)
	}
	st.finished = successCondition(t0)
	tr := st.trackPods(t0, false)
	if !tr.needsFlush || len(tr.removeFinalizer) != 3 {
		t.Fatalf("trackPods = %+v, want a flush and 3 finalizers to remove", tr)
	}
	if got := job.Status.UncountedTerminatedPods.Succeeded; !slices.Equal(got, []types.UID{"a", "b", "c"}) {
		t.Errorf("uncounted succeeded = %v", got)
	}
	if c := findCondition(job.Status.Conditions, batchv1.JobSuccessCriteriaMet); c == nil || c.Reason != "CompletionsReached" {
		t.Errorf("conditions = %+v, want SuccessCriteriaMet", job.Status.Conditions)
	}
	if st.finished.Type != batchv1.JobComplete {
		t.Errorf("final condition = %s, want Complete", st.finished.Type)
	}
	// Not finished while pods are uncounted.
	if st.enactFinished(t0) {
		t.Fatal("finished with uncounted pods")
	}
	// Finalizers removed.
	if !cleanUncounted(&job.Status, map[types.UID]bool{}) {
		t.Fatal("cleanUncounted changed nothing")
	}
	if job.Status.Succeeded != 3 || len(job.Status.UncountedTerminatedPods.Succeeded) != 0 {
		t.Errorf("succeeded %d, uncounted %v", job.Status.Succeeded, job.Status.UncountedTerminatedPods)
	}
	if !st.enactFinished(t0) {
		t.Fatal("not finished")
	}
	if c := findCondition(job.Status.Conditions, batchv1.JobComplete); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("conditions = %+v, want Complete", job.Status.Conditions)
	}
	if job.Status.CompletionTime == nil || !job.Status.CompletionTime.Time.Equal(t0) {
		t.Errorf("completionTime = %v", job.Status.CompletionTime)
	}
}

func TestTrackFailedJob(t *testing.T) {
	job := testJob(func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](0)
		j.Status.StartTime = &metav1.Time{Time: t0.Add(-time.Minute)}
	})
	pods := []*corev1.Pod{testPod("f", corev1.PodFailed), testPod("run", corev1.PodRunning, deleting), testPod("ok", corev1.PodSucceeded)}
	st := newSyncState(job, pods, nil)
	st.decideFinished(t0)
	if st.finished == nil || st.finished.Type != batchv1.JobFailureTarget {
		t.Fatalf("finished = %v, want FailureTarget", st.finished)
	}
	tr := st.trackPods(t0, false)
	if got := names(tr.removeFinalizer); !slices.Equal(got, []string{"f", "run", "ok"}) {
		t.Errorf("remove finalizers of %v", got)
	}
	u := job.Status.UncountedTerminatedPods
	if !slices.Equal(u.Failed, []types.UID{"f", "run"}) || !slices.Equal(u.Succeeded, []types.UID{"ok"}) {
		t.Errorf("uncounted = %+v", u)
	}
	if findCondition(job.Status.Conditions, batchv1.JobFailureTarget) == nil || st.finished.Type != batchv1.JobFailed {
		t.Errorf("conditions %+v, final %v", job.Status.Conditions, st.finished.Type)
	}
	cleanUncounted(&job.Status, map[types.UID]bool{})
	st.terminating = 1
	if st.enactFinished(t0) {
		t.Fatal("finished while a pod terminates")
	}
	st.terminating = 0
	if !st.enactFinished(t0) || job.Status.Failed != 2 || job.Status.CompletionTime != nil {
		t.Errorf("status = %+v", job.Status)
	}
}

func TestTrackIndexed(t *testing.T) {
	job := testJob(func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions = ptr.To[int32](6)
		j.Status.CompletedIndexes = "0,1"
		j.Status.Succeeded = 2
	})
	pods := []*corev1.Pod{testPod("i3", corev1.PodSucceeded, index(3)), testPod("i2", corev1.PodSucceeded, index(2)),
		testPod("i2b", corev1.PodSucceeded, index(2)), testPod("i5", corev1.PodRunning, index(5))}
	st := newSyncState(job, pods, nil)
	tr := st.trackPods(t0, false)
	if job.Status.CompletedIndexes != "0-3" || job.Status.Succeeded != 4 || !tr.needsFlush {
		t.Errorf("completedIndexes %q, succeeded %d, flush %v", job.Status.CompletedIndexes, job.Status.Succeeded, tr.needsFlush)
	}
	if len(job.Status.UncountedTerminatedPods.Succeeded) != 0 {
		t.Errorf("indexed successes are tracked by index, got uncounted %v", job.Status.UncountedTerminatedPods.Succeeded)
	}
}

func TestIntervals(t *testing.T) {
	for _, tt := range []struct {
		in          string
		completions int
		out         string
		total       int
	}{
		{"", 5, "", 0},
		{"0,1", 5, "0,1", 2},
		{"0-2,4", 5, "0-2,4", 4},
		{"1,2,3,7", 5, "1-3", 3},
		{"0-9", 5, "0-4", 5},
		{"x,2", 5, "2", 1},
	} {
		iv := parseIntervals(tt.in, tt.completions)
		if iv.String() != tt.out || iv.total() != tt.total {
			t.Errorf("parseIntervals(%q, %d) = %q (%d), want %q (%d)", tt.in, tt.completions, iv.String(), iv.total(), tt.out, tt.total)
		}
	}
	iv := parseIntervals("1,5-6", 10).withIndexes([]int{0, 3, 7})
	if iv.String() != "0,1,3,5-7" || !iv.has(6) || iv.has(4) {
		t.Errorf("merged = %q", iv.String())
	}
}

func TestMatchPodFailurePolicy(t *testing.T) {
	policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: ptr.To("c"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0, 1}}},
	}}
	disrupted := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	}
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		want failurePolicyMatch
	}{
		{"disrupted pods are ignored", testPod("p", corev1.PodFailed, exited(42, t0), disrupted),
			failurePolicyMatch{count: false, action: batchv1.PodFailurePolicyActionIgnore}},
		{"exit 42 fails the job", testPod("p", corev1.PodFailed, exited(42, t0)),
			failurePolicyMatch{failJob: "Container c for pod default/p failed with exit code 42 matching FailJob rule at index 1", count: true, action: batchv1.PodFailurePolicyActionFailJob}},
		{"exit 7 counts", testPod("p", corev1.PodFailed, exited(7, t0)),
			failurePolicyMatch{count: true, action: batchv1.PodFailurePolicyActionCount}},
		{"exit 1 matches nothing and counts", testPod("p", corev1.PodFailed, exited(1, t0)), failurePolicyMatch{count: true}},
	} {
		if d := cmp.Diff(tt.want, matchPodFailurePolicy(policy, tt.pod), cmp.AllowUnexported(failurePolicyMatch{})); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

func TestNewPod(t *testing.T) {
	job := testJob(func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) })
	p, err := newPod(job, podTemplate(job), 2)
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.GetControllerOf(p)
	switch {
	case p.GenerateName != "pi-2-":
		t.Errorf("generateName %q", p.GenerateName)
	case ref == nil || ref.UID != "job-uid" || !ptr.Deref(ref.BlockOwnerDeletion, false):
		t.Errorf("controller ref %+v", ref)
	case !hasTrackingFinalizer(p):
		t.Errorf("finalizers %v", p.Finalizers)
	case p.Annotations[batchv1.JobCompletionIndexAnnotation] != "2" || p.Labels[batchv1.JobCompletionIndexAnnotation] != "2":
		t.Errorf("index annotation/label %v %v", p.Annotations, p.Labels)
	case p.Spec.Hostname != "pi-2":
		t.Errorf("hostname %q", p.Spec.Hostname)
	case len(p.Spec.Containers[0].Env) != 1 || p.Spec.Containers[0].Env[0].Name != "JOB_COMPLETION_INDEX":
		t.Errorf("env %+v", p.Spec.Containers[0].Env)
	}
	if len(job.Spec.Template.Spec.Containers[0].Env) != 0 || len(job.Spec.Template.Finalizers) != 0 {
		t.Error("the job's template was changed")
	}
	if got := indexedPodsPrefix("a-very-long-job-name-that-goes-on-and-on-and-on-and-on-forever", 12); len(got) != maxGeneratedNameLength || got[len(got)-4:] != "-12-" {
		t.Errorf("indexedPodsPrefix = %q", got)
	}
}

func TestTTLExpiry(t *testing.T) {
	finished := func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{*newCondition(batchv1.JobComplete, "", "", t0)}
	}
	withTTL := func(j *batchv1.Job) { j.Spec.TTLSecondsAfterFinished = ptr.To[int32](100) }
	if _, ok, _ := ttlExpiry(testJob(withTTL)); ok {
		t.Error("an unfinished job expires")
	}
	if _, ok, _ := ttlExpiry(testJob(finished)); ok {
		t.Error("a job without TTL expires")
	}
	at, ok, err := ttlExpiry(testJob(finished, withTTL))
	if !ok || err != nil || !at.Equal(t0.Add(100*time.Second)) {
		t.Errorf("ttlExpiry = %v, %v, %v", at, ok, err)
	}
}

// owned makes a pod the job's: its controller reference and the labels
// the job's selector matches.
func owned(p *corev1.Pod) {
	matching(p)
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(testJob(), controllerKind)}
}

// matching gives a pod the labels the job's selector matches.
func matching(p *corev1.Pod) {
	p.Labels = map[string]string{batchv1.ControllerUidLabel: "job-uid"}
}

// planSummary is the part of a Plan a table row states.
type planSummary struct {
	Skip, Finished, DeleteExpired bool
	Warning                       string
	LogError                      string
	RequeueAfter                  time.Duration
	Adopt, Release, StopActive    []string
	Finishing                     batchv1.JobConditionType
	Manage                        *managePlan
	ManageDelete                  []string
	Active                        int32
	StartTime                     bool
}

func summarize(p Plan) planSummary {
	s := planSummary{Skip: p.Skip, Finished: p.Finished, DeleteExpired: p.DeleteExpired, LogError: p.LogError,
		RequeueAfter: p.RequeueAfter, Adopt: names(p.Adopt), Release: names(p.Release), StopActive: names(p.StopActive)}
	if p.Warning != nil {
		s.Warning = p.Warning.Reason
	}
	if p.Sync != nil {
		if p.Sync.finished != nil {
			s.Finishing = p.Sync.finished.Type
		}
		s.Active = p.Sync.active
		s.StartTime = p.Sync.job.Status.StartTime != nil
	}
	if p.Manage != nil {
		m := *p.Manage
		s.ManageDelete, m.delete = names(m.delete), nil
		s.Manage = &m
	}
	return s
}

func TestPlan(t *testing.T) {
	finished := func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{*newCondition(batchv1.JobComplete, "", "", t0.Add(-time.Minute))}
	}
	ttl := func(s int32) func(*batchv1.Job) {
		return func(j *batchv1.Job) { j.Spec.TTLSecondsAfterFinished = ptr.To(s) }
	}
	started := func(j *batchv1.Job) { j.Status.StartTime = &metav1.Time{Time: t0.Add(-20 * time.Second)} }
	tests := []struct {
		name      string
		job       *batchv1.Job
		pods      []*corev1.Pod
		unsettled bool // expectations outstanding
		backoff   backoffRecord
		want      planSummary
	}{
		{name: "a finished job without TTL is left alone", job: testJob(finished),
			want: planSummary{Finished: true}},
		{name: "a finished job's TTL ahead: look again then", job: testJob(finished, ttl(100)),
			want: planSummary{Finished: true, RequeueAfter: 40 * time.Second}},
		{name: "a finished job's TTL passed: delete it", job: testJob(finished, ttl(30)),
			want: planSummary{Finished: true, DeleteExpired: true}},
		{name: "managed by another controller", job: testJob(func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("example.com/other") }),
			want: planSummary{Skip: true}},
		{name: "unknown completion mode", job: testJob(func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To[batchv1.CompletionMode]("Odd") }),
			want: planSummary{Skip: true, Warning: "UnknownCompletionMode"}},
		{name: "no selector: no pods ever", job: testJob(func(j *batchv1.Job) { j.Spec.Selector = nil }),
			want: planSummary{Skip: true, LogError: "job has no selector; not syncing"}},
		{name: "a new job starts and creates up to parallelism", job: testJob(),
			want: planSummary{StartTime: true, Manage: &managePlan{create: 2}}},
		{name: "a suspended job does not start", job: testJob(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }),
			want: planSummary{Manage: &managePlan{}}},
		{name: "outstanding expectations: pods are not managed", job: testJob(), unsettled: true,
			want: planSummary{StartTime: true}},
		{name: "claims: a matching orphan is adopted, a pod no longer matching released", job: testJob(started),
			pods: []*corev1.Pod{
				testPod("orphan", corev1.PodRunning, noFinalizer, matching),
				testPod("mine", corev1.PodRunning, owned, func(p *corev1.Pod) { p.Labels = nil }),
				testPod("other", corev1.PodRunning),
			},
			want: planSummary{StartTime: true, Adopt: []string{"orphan"}, Release: []string{"mine"}, Active: 1,
				Manage: &managePlan{create: 1}}},
		{name: "backoff holds the replacement", job: testJob(started),
			pods:    []*corev1.Pod{testPod("f", corev1.PodFailed, owned, exited(1, t0.Add(-time.Second)))},
			backoff: backoffRecord{},
			want:    planSummary{StartTime: true, Manage: &managePlan{wait: 9 * time.Second}}},
		{name: "past the backoff limit: the active pods stop",
			job: testJob(started, func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](0) }),
			pods: []*corev1.Pod{testPod("f", corev1.PodFailed, owned, exited(1, t0.Add(-time.Second))),
				testPod("a", corev1.PodRunning, owned)},
			want: planSummary{StartTime: true, StopActive: []string{"a"}, Active: 1, Finishing: batchv1.JobFailureTarget}},
		{name: "an active deadline ahead: look again then",
			job:  testJob(started, func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) }),
			pods: []*corev1.Pod{testPod("a", corev1.PodRunning, owned), testPod("b", corev1.PodRunning, owned)},
			want: planSummary{StartTime: true, RequeueAfter: 10 * time.Second, Active: 2, Manage: &managePlan{}}},
		{name: "indexed: the lowest free indexes",
			job:  testJob(started, func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) }),
			pods: []*corev1.Pod{testPod("i0", corev1.PodRunning, owned, index(0))},
			want: planSummary{StartTime: true, Active: 1, Manage: &managePlan{create: 1, indexes: []int{1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := State{Job: tt.job, Pods: tt.pods, Satisfied: !tt.unsettled, Backoff: tt.backoff,
				BackoffBase: 10 * time.Second, BackoffMax: time.Minute, Now: t0}
			got := summarize(plan(st))
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(managePlan{})); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

func TestPlanAdoptedPodGetsFinalizer(t *testing.T) {
	p := plan(State{Job: testJob(), Pods: []*corev1.Pod{testPod("orphan", corev1.PodRunning, noFinalizer, matching)}, Now: t0})
	if len(p.Sync.pods) != 1 || !hasTrackingFinalizer(p.Sync.pods[0]) {
		t.Fatalf("adopted pod as planned: %+v", p.Sync.pods)
	}
	if hasTrackingFinalizer(p.Adopt[0]) {
		t.Error("the cache's pod was modified")
	}
}

func TestOrphanedWithFinalizer(t *testing.T) {
	job := testJob()
	done := testJob(func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{*newCondition(batchv1.JobComplete, "", "", t0)}
	})
	tests := []struct {
		name  string
		pod   *corev1.Pod
		gone  bool
		owner *batchv1.Job
		want  bool
	}{
		{"no controller", testPod("p", corev1.PodRunning), false, nil, true},
		{"no controller, no finalizer", testPod("p", corev1.PodRunning, noFinalizer), false, nil, false},
		{"a running job's pod", testPod("p", corev1.PodRunning, owned), false, job, false},
		{"a pod whose job is gone, still running", testPod("p", corev1.PodRunning, owned), false, nil, true},
		{"a pod being deleted, its job gone", testPod("p", corev1.PodRunning, owned, deleting), false, nil, true},
		{"a pod deleted, its job finished", testPod("p", corev1.PodSucceeded, owned), true, done, true},
		{"a pod deleted, its job running", testPod("p", corev1.PodSucceeded, owned), true, job, false},
	}
	for _, tt := range tests {
		if got := orphanedWithFinalizer(tt.pod, tt.gone, tt.owner); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
