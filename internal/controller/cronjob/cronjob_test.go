package cronjob_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/controllertest"
	"plainkube.dev/plainkube/internal/controller/cronjob"
	"plainkube.dev/plainkube/internal/controller/job"
	"plainkube.dev/plainkube/pkg/testenv"
)

// eventually polls cond every 50 ms for up to 20 s.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	controllertest.EventuallyWithin(t, 50*time.Millisecond, 20*time.Second, what, cond)
}

// TestCronJobSchedulesJobs runs the CronJob controller on a fake clock
// (and the Job controller, scheduler and simulated nodes for real): at
// each scheduled minute it creates the minute's Job, notices it complete,
// keeps one successful Job of history, and does nothing while suspended.
func TestCronJobSchedulesJobs(t *testing.T) {
	env := testenv.Start(t, testenv.WithScheduler(), testenv.WithSimNodes(2))
	log := controllertest.LoggerAt(t, slog.LevelInfo)
	clk := clocktesting.NewFakeClock(time.Now())
	cjc, err := cronjob.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cjc.Clock, cjc.Logger = clk, log.With("controller", "cronjob")
	jc, err := job.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	jc.Logger = log.With("controller", "job")
	controllertest.Run(t, cjc, 2)
	controllertest.Run(t, jc, 2)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ctx := context.Background()

	cj, err := cs.BatchV1().CronJobs("default").Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: batchv1.CronJobSpec{
			Schedule:                   "* * * * *",
			SuccessfulJobsHistoryLimit: ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hello"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"sim.plainkube.dev/exit-after": "1s"}},
					Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure,
						Containers: []corev1.Container{{Name: "hello", Image: "busybox:1.36"}}},
				}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := cj.CreationTimestamp.Time.Truncate(time.Minute).Add(time.Minute)
	jobName := func(at time.Time) string { return fmt.Sprintf("hello-%d", at.Unix()/60) }

	// Before the first scheduled minute: nothing.
	clk.SetTime(first.Add(-time.Second))
	time.Sleep(300 * time.Millisecond)
	if l, _ := cs.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Fatalf("jobs before the schedule: %v", l.Items)
	}

	runMinute := func(at time.Time) *batchv1.Job {
		t.Helper()
		clk.SetTime(at.Add(2 * time.Second))
		var j *batchv1.Job
		eventually(t, "job "+jobName(at), func() (bool, error) {
			var err error
			j, err = cs.BatchV1().Jobs("default").Get(ctx, jobName(at), metav1.GetOptions{})
			return err == nil, err
		})
		ref := metav1.GetControllerOf(j)
		switch {
		case ref == nil || ref.Kind != "CronJob" || ref.UID != cj.UID:
			t.Errorf("job controller %+v", ref)
		case j.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != at.UTC().Format(time.RFC3339):
			t.Errorf("job annotations %v, want the scheduled time %s", j.Annotations, at.UTC().Format(time.RFC3339))
		case j.Labels["app"] != "hello":
			t.Errorf("job labels %v", j.Labels)
		}
		eventually(t, "the job seen completed", func() (bool, error) {
			got, err := cs.BatchV1().CronJobs("default").Get(ctx, "hello", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := got.Status
			return len(st.Active) == 0 && st.LastScheduleTime != nil && st.LastScheduleTime.Time.Equal(at) &&
				st.LastSuccessfulTime != nil, fmt.Errorf("status %+v", st)
		})
		return j
	}
	j1 := runMinute(first)
	waitEvent(t, cs, cj, "SuccessfulCreate", "Created job "+j1.Name)
	waitEvent(t, cs, cj, "SawCompletedJob", "Saw completed job: "+j1.Name+", condition: Complete")

	second := first.Add(time.Minute)
	j2 := runMinute(second)
	eventually(t, "the older job cleaned up", func() (bool, error) {
		_, err := cs.BatchV1().Jobs("default").Get(ctx, j1.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	if _, err := cs.BatchV1().Jobs("default").Get(ctx, j2.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the newest job is gone: %v", err)
	}
	waitEvent(t, cs, cj, "SuccessfulDelete", "Deleted job "+j1.Name)

	// Suspended: the next minute passes without a job.
	if _, err := cs.BatchV1().CronJobs("default").Patch(ctx, "hello", "application/merge-patch+json",
		[]byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	third := second.Add(time.Minute)
	clk.SetTime(third.Add(2 * time.Second))
	time.Sleep(time.Second)
	if _, err := cs.BatchV1().Jobs("default").Get(ctx, jobName(third), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a suspended cronjob started a job: %v", err)
	}
}

func waitEvent(t *testing.T, cs kubernetes.Interface, cj *batchv1.CronJob, reason, message string) {
	t.Helper()
	eventually(t, "event "+reason, func() (bool, error) {
		l, err := cs.CoreV1().Events(cj.Namespace).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(cj.UID)).String()})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range l.Items {
			if e.Reason == reason && e.Message == message {
				return true, nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Errorf("events %q", seen)
	})
}
