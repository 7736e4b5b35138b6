package job

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"plainkube.dev/plainkube/internal/api/podutil"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// completionIndexEnv is the variable an Indexed Job's containers get
// their completion index in.
const completionIndexEnv = "JOB_COMPLETION_INDEX"

// maxGeneratedNameLength is how long a generateName prefix may be (the
// API server appends five random characters to a 63-character limit).
const maxGeneratedNameLength = 63 - 5

func hasTrackingFinalizer(p *corev1.Pod) bool {
	for _, f := range p.Finalizers {
		if f == batchv1.JobTrackingFinalizer {
			return true
		}
	}
	return false
}

// onlyReplaceFailedPods: a pod being deleted is replaced only once it is
// terminal (podReplacementPolicy Failed, implied by a podFailurePolicy).
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	if p := job.Spec.PodReplacementPolicy; p != nil && *p == batchv1.Failed {
		return true
	}
	return job.Spec.PodFailurePolicy != nil
}

// isPodFailed is whether the job counts p as failed: it is Failed, or
// (unless only failed pods are replaced) it is being deleted without
// having succeeded — an orphaned or evicted pod may never reach Failed.
func isPodFailed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailedPods(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

// finishedTime is when p finished, as upstream estimates it: the last
// container to terminate, else the time Ready turned False, else the
// deletion time less the grace period, else its creation.
func finishedTime(p *corev1.Pod) time.Time {
	var last *time.Time
	complete := len(p.Status.ContainerStatuses) > 0
	for i := range p.Status.ContainerStatuses {
		t := p.Status.ContainerStatuses[i].State.Terminated
		if t == nil || t.FinishedAt.IsZero() {
			complete = false
			break
		}
		if last == nil || last.Before(t.FinishedAt.Time) {
			last = &t.FinishedAt.Time
		}
	}
	if complete && last != nil {
		return *last
	}
	if c := podutil.ReadyCondition(p); c != nil && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	if p.DeletionTimestamp != nil {
		var grace int64
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

func sortByFinishedTime(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool { return finishedTime(pods[i]).Before(finishedTime(pods[j])) })
}

// completionIndex is the pod's completion index annotation, or
// unknownIndex.
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return unknownIndex
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return unknownIndex
	}
	return i
}

// podsPrefix is the generateName of a NonIndexed Job's pods.
func podsPrefix(jobName string) string {
	prefix := jobName + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		prefix = jobName
	}
	return prefix
}

// indexedPodsPrefix is "<job>-<index>-", the job name cut short if need be.
func indexedPodsPrefix(jobName string, index int) string {
	suffix := "-" + strconv.Itoa(index) + "-"
	prefix := jobName + suffix
	if len(prefix) > maxGeneratedNameLength {
		prefix = prefix[:maxGeneratedNameLength-len(suffix)] + suffix
	}
	return prefix
}

// podTemplate is the template a job's pods are made from: the job's, with
// the tracking finalizer and, for an Indexed Job, JOB_COMPLETION_INDEX in
// every container's environment (from the index label).
func podTemplate(job *batchv1.Job) *corev1.PodTemplateSpec {
	t := job.Spec.Template.DeepCopy()
	if isIndexed(job) {
		for _, list := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
			for i := range list {
				addIndexEnv(&list[i])
			}
		}
	}
	if !containsString(t.Finalizers, batchv1.JobTrackingFinalizer) {
		t.Finalizers = append(t.Finalizers, batchv1.JobTrackingFinalizer)
	}
	return t
}

func addIndexEnv(c *corev1.Container) {
	for _, e := range c.Env {
		if e.Name == completionIndexEnv {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: completionIndexEnv, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1",
			FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation)},
	}})
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// newPod is the pod job creates from t (see podTemplate), controlled by
// job; index is its completion index, or unknownIndex for a NonIndexed
// Job.
func newPod(job *batchv1.Job, t *corev1.PodTemplateSpec, index int) (*corev1.Pod, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		GenerateName:    podsPrefix(job.Name),
		Namespace:       job.Namespace,
		Labels:          copyMap(t.Labels),
		Annotations:     copyMap(t.Annotations),
		Finalizers:      append([]string(nil), t.Finalizers...),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, controllerKind)},
	}}
	pod.Spec = *t.Spec.DeepCopy()
	if index != unknownIndex {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(index)
		pod.Labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(index)
		pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, index)
		pod.GenerateName = indexedPodsPrefix(job.Name, index)
	}
	if len(pod.Labels) == 0 {
		return nil, fmt.Errorf("unable to create pods, no labels")
	}
	return pod, nil
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// removeFinalizerPatch is the strategic merge patch that takes the
// tracking finalizer off a pod.
func removeFinalizerPatch() []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
	}})
	return b
}

// adoptPatch makes job the controller of the pod with uid podUID and adds
// the tracking finalizer.
func adoptPatch(job *batchv1.Job, podUID types.UID) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(job, controllerKind)},
		"uid":             podUID,
		"finalizers":      []string{batchv1.JobTrackingFinalizer},
	}})
	return b
}

// byRemovalOrder sorts active pods so that those least far along come
// first (upstream's ActivePods): unscheduled, then pending, unknown,
// running; not ready before ready; ready for less time first; more
// restarts first; newer first.
type byRemovalOrder []*corev1.Pod

func (s byRemovalOrder) Len() int      { return len(s) }
func (s byRemovalOrder) Swap(i, j int) { s[i], s[j] = s[j], s[i] }

var phaseRank = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

func (s byRemovalOrder) Less(i, j int) bool {
	a, b := s[i], s[j]
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if ra, rb := phaseRank[a.Status.Phase], phaseRank[b.Status.Phase]; ra != rb {
		return ra < rb
	}
	if ra, rb := podutil.IsReady(a), podutil.IsReady(b); ra != rb {
		return !ra
	}
	if podutil.IsReady(a) && podutil.IsReady(b) {
		ta, tb := podutil.ReadyCondition(a).LastTransitionTime, podutil.ReadyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return afterOrZero(ta.Time, tb.Time)
		}
	}
	if ca, cb := maxRestarts(a), maxRestarts(b); ca != cb {
		return ca > cb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return afterOrZero(a.CreationTimestamp.Time, b.CreationTimestamp.Time)
	}
	return false
}

func afterOrZero(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero()
	}
	return a.After(b)
}

func maxRestarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n = max(n, c.RestartCount)
	}
	return n
}
