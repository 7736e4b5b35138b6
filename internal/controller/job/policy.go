package job

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// failurePolicyMatch is what a job's podFailurePolicy says about one
// failed pod.
type failurePolicyMatch struct {
	// failJob is the Job's failure message when a FailJob rule matched.
	failJob string
	// count is false when an Ignore rule matched: the failure does not
	// count towards backoffLimit.
	count bool
	// action is the matched rule's action, if any rule matched.
	action batchv1.PodFailurePolicyAction
}

// matchPodFailurePolicy applies the rules in order; the first that
// matches decides. No policy, or no matching rule, counts the failure; so
// does a FailIndex rule, which also fails the pod's index (indexFailed).
func matchPodFailurePolicy(policy *batchv1.PodFailurePolicy, pod *corev1.Pod) failurePolicyMatch {
	if policy == nil {
		return failurePolicyMatch{count: true}
	}
	for i, rule := range policy.Rules {
		var failJobMsg string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchOnExitCodes(&pod.Status, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			failJobMsg = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
				cs.Name, pod.Namespace, pod.Name, cs.State.Terminated.ExitCode, rule.Action, i)
		case rule.OnPodConditions != nil:
			c := matchOnPodConditions(&pod.Status, rule.OnPodConditions)
			if c == nil {
				continue
			}
			failJobMsg = fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d",
				pod.Namespace, pod.Name, c.Type, rule.Action, i)
		default:
			continue
		}
		switch rule.Action {
		case batchv1.PodFailurePolicyActionIgnore:
			return failurePolicyMatch{count: false, action: rule.Action}
		case batchv1.PodFailurePolicyActionFailJob:
			return failurePolicyMatch{failJob: failJobMsg, count: true, action: rule.Action}
		case batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex:
			return failurePolicyMatch{count: true, action: rule.Action}
		}
	}
	return failurePolicyMatch{count: true}
}

// matchOnExitCodes is the first terminated container (then init
// container) with a non-zero exit code the requirement matches.
func matchOnExitCodes(st *corev1.PodStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for i := range list {
			cs := &list[i]
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 {
				continue
			}
			if req.ContainerName != nil && *req.ContainerName != cs.Name {
				continue
			}
			if exitCodeMatches(t.ExitCode, req) {
				return cs
			}
		}
	}
	return nil
}

func exitCodeMatches(code int32, req *batchv1.PodFailurePolicyOnExitCodesRequirement) bool {
	in := false
	for _, v := range req.Values {
		if v == code {
			in = true
			break
		}
	}
	switch req.Operator {
	case batchv1.PodFailurePolicyOnExitCodesOpIn:
		return in
	case batchv1.PodFailurePolicyOnExitCodesOpNotIn:
		return !in
	}
	return false
}

func matchOnPodConditions(st *corev1.PodStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range st.Conditions {
		for _, p := range patterns {
			if st.Conditions[i].Type == p.Type && st.Conditions[i].Status == p.Status {
				return &st.Conditions[i]
			}
		}
	}
	return nil
}

// failJobMessage is the message of the first failed pod that matches a
// FailJob rule, if any.
func failJobMessage(job *batchv1.Job, pods []*corev1.Pod) string {
	if job.Spec.PodFailurePolicy == nil {
		return ""
	}
	for _, p := range pods {
		if isPodFailed(p, job) {
			if m := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); m.failJob != "" {
				return m.failJob
			}
		}
	}
	return ""
}

// countedFailures is how many of failed count towards backoffLimit.
func countedFailures(job *batchv1.Job, failed []*corev1.Pod) int {
	n := 0
	for _, p := range failed {
		if matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).count {
			n++
		}
	}
	return n
}

// matchSuccessPolicy reports whether an Indexed Job's successPolicy is met
// by its succeeded indexes, and upstream's message naming the rule.
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, completions int32, succeeded intervals) (string, bool) {
	if policy == nil || len(succeeded) == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		if rule.SucceededIndexes != nil {
			required := parseIntervals(*rule.SucceededIndexes, int(completions))
			if len(required) == 0 {
				continue
			}
			if indexesRuleMatches(required, succeeded, rule.SucceededCount) {
				return fmt.Sprintf("Matched rules at index %d", i), true
			}
		} else if rule.SucceededCount != nil && succeeded.total() >= int(*rule.SucceededCount) {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}

// indexesRuleMatches: all required indexes succeeded, or at least
// count of them did.
func indexesRuleMatches(required, succeeded intervals, count *int32) bool {
	contains := 0
	for _, r := range required {
		for _, s := range succeeded {
			if overlap := min(r.last, s.last) - max(r.first, s.first) + 1; overlap > 0 {
				contains += overlap
			}
		}
	}
	return contains == required.total() || (count != nil && contains >= int(*count))
}

// pastBackoffLimitOnFailure: with restartPolicy OnFailure failures show as
// container restarts of running or pending pods; the job fails when their
// sum reaches backoffLimit (any restart, with a limit of 0).
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, cs := range p.Status.InitContainerStatuses {
			restarts += cs.RestartCount
		}
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
	}
	limit := backoffLimit(job)
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

func backoffLimit(job *batchv1.Job) int32 {
	if job.Spec.BackoffLimit == nil {
		return 6
	}
	return *job.Spec.BackoffLimit
}
