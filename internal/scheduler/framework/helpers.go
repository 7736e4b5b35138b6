package framework

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultNormalizeScore scales scores to [0, maxPriority] by the highest
// one; with reverse, a high raw score becomes a low one. All-zero scores
// stay zero (or all become maxPriority with reverse).
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores []NodeScore) *Status {
	var maxCount int64
	for i := range scores {
		if scores[i].Score > maxCount {
			maxCount = scores[i].Score
		}
	}
	if maxCount == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return nil
	}
	for i := range scores {
		s := maxPriority * scores[i].Score / maxCount
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
	return nil
}

// PodStartTime is status.startTime, or the creation time for a pod that has
// not started.
func PodStartTime(pod *v1.Pod) metav1.Time {
	if pod.Status.StartTime != nil {
		return *pod.Status.StartTime
	}
	return pod.CreationTimestamp
}

// MoreImportantPod orders pods by priority, then by earlier start time.
func MoreImportantPod(a, b *v1.Pod) bool {
	pa, pb := PodPriority(a), PodPriority(b)
	if pa != pb {
		return pa > pb
	}
	ta, tb := PodStartTime(a), PodStartTime(b)
	return ta.Before(&tb)
}
