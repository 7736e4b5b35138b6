package podautoscaler

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// History is what the controller remembers of one HPA between syncs, as
// upstream's does (in memory: a restarted controller starts afresh): the
// recent recommendations, for the stabilization windows, and the recent
// changes of scale, for the scaling policies' periods.
type History struct {
	Recommendations []Recommendation
	ScaleUps        []ScaleEvent
	ScaleDowns      []ScaleEvent
}

// Recommendation is a replica count the metrics called for, and when.
type Recommendation struct {
	Replicas int32
	At       time.Time
}

// ScaleEvent is a change of scale by Change replicas (never negative).
type ScaleEvent struct {
	Change int32
	At     time.Time
}

func minInt32(a, b int32) int32 { return min(a, b) }
func maxInt32(a, b int32) int32 { return max(a, b) }

// clone is a deep copy, which a plan changes freely.
func (h History) clone() History {
	return History{
		Recommendations: append([]Recommendation(nil), h.Recommendations...),
		ScaleUps:        append([]ScaleEvent(nil), h.ScaleUps...),
		ScaleDowns:      append([]ScaleEvent(nil), h.ScaleDowns...),
	}
}

// Limits of the scale-up rate when an HPA has no behavior: at most twice
// the current count, and at least to 4.
const (
	scaleUpLimitFactor  = 2.0
	scaleUpLimitMinimum = 4.0
)

// conditionUpdate is a condition a normalization sets.
type conditionUpdate struct {
	Type    autoscalingv2.HorizontalPodAutoscalerConditionType
	Status  corev1.ConditionStatus
	Reason  string
	Message string
}

// normalization is what bounds a recommendation.
type normalization struct {
	Current, Desired, Min, Max int32
	// Behavior is the HPA's (nil: upstream's older rules, with
	// DownscaleWindow as the scale-down stabilization window).
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
	// DownscaleWindow is the controller's default scale-down
	// stabilization window (--horizontal-pod-autoscaler-downscale-stabilization).
	DownscaleWindow time.Duration
	Now             time.Time
}

// normalize bounds n.Desired by the stabilization windows, the scaling
// rate and min/max, recording the recommendation in h; it returns the
// bounded count and the AbleToScale and ScalingLimited conditions that
// say why. Without a behavior, upstream's older rules apply: only
// scale-downs are stabilized (over DownscaleWindow) and scale-ups are
// limited by scaleUpLimitFactor and scaleUpLimitMinimum.
func normalize(h *History, n normalization) (int32, []conditionUpdate) {
	var (
		stabilized int32
		why        reasonMessage
		bounded    limit
	)
	if n.Behavior == nil {
		stabilized, why = stabilizeDown(h, n.Desired, n.DownscaleWindow, n.Now), scaleDownStabilized
		bounded = limitWithoutBehavior(n.Current, stabilized, n.Min, n.Max)
	} else {
		stabilized, why = stabilizeWithBehavior(h, n, windowOf(n.Behavior.ScaleUp, 0), windowOf(n.Behavior.ScaleDown, n.DownscaleWindow))
		bounded = limitByRate(h, n, stabilized)
	}
	able := conditionUpdate{autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size"}
	if stabilized != n.Desired {
		able.Reason, able.Message = why.reason, why.message
	}
	isLimited := corev1.ConditionFalse
	if bounded.replicas != stabilized {
		isLimited = corev1.ConditionTrue
	}
	return bounded.replicas, []conditionUpdate{able, {autoscalingv2.ScalingLimited, isLimited, bounded.reason, bounded.message}}
}

// reasonMessage is a condition's reason and message.
type reasonMessage struct{ reason, message string }

// Why a stabilization window held the count.
var (
	scaleUpStabilized   = reasonMessage{"ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"}
	scaleDownStabilized = reasonMessage{"ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"}
)

// stabilizeDown is the highest recommendation within the window (the
// desired count included), recording desired in place of one older than
// the window.
func stabilizeDown(h *History, desired int32, window time.Duration, now time.Time) int32 {
	highest := desired
	cutoff := now.Add(-window)
	old := -1
	for i, r := range h.Recommendations {
		if r.At.Before(cutoff) {
			old = i
		} else if r.Replicas > highest {
			highest = r.Replicas
		}
	}
	recordRecommendation(h, old, Recommendation{desired, now})
	return highest
}

func recordRecommendation(h *History, old int, r Recommendation) {
	if old >= 0 {
		h.Recommendations[old] = r
	} else {
		h.Recommendations = append(h.Recommendations, r)
	}
}

// limit is a bounded count and the ScalingLimited reason and message
// that say what bounds it.
type limit struct {
	replicas        int32
	reason, message string
}

// within is the limit of a count nothing bounds.
func within(replicas int32) limit {
	return limit{replicas, "DesiredWithinRange", "the desired count is within the acceptable range"}
}

// ceiling is the highest count allowed: maxReplicas, or the scale-up rate
// limit if that is lower.
func ceiling(maxReplicas, rateLimit int32) limit {
	if maxReplicas > rateLimit {
		return limit{rateLimit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"}
	}
	return limit{maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"}
}

// floor is the lowest count allowed: minReplicas, or the scale-down rate
// limit if that is higher.
func floor(minReplicas, rateLimit int32) limit {
	if minReplicas < rateLimit {
		return limit{rateLimit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"}
	}
	return limit{minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"}
}

// limitWithoutBehavior bounds desired by min, max and the scale-up limit.
func limitWithoutBehavior(current, desired, minReplicas, maxReplicas int32) limit {
	upLimit := int32(math.Max(scaleUpLimitFactor*float64(current), scaleUpLimitMinimum))
	if lowest := floor(minReplicas, math.MinInt32); desired < lowest.replicas {
		return lowest
	}
	if highest := ceiling(maxReplicas, upLimit); desired > highest.replicas {
		return highest
	}
	return within(desired)
}

// windowOf is rules' stabilization window (def when unset: the API fills
// every field of a behavior but the scale-down window, which is the
// controller's default).
func windowOf(rules *autoscalingv2.HPAScalingRules, def time.Duration) time.Duration {
	if rules == nil || rules.StabilizationWindowSeconds == nil {
		return def
	}
	return time.Duration(*rules.StabilizationWindowSeconds) * time.Second
}

// stabilizeWithBehavior keeps the count between the lowest recommendation
// of the scale-up window and the highest of the scale-down window.
func stabilizeWithBehavior(h *History, n normalization, upWindow, downWindow time.Duration) (int32, reasonMessage) {
	upRec, downRec := n.Desired, n.Desired
	upCutoff, downCutoff := n.Now.Add(-upWindow), n.Now.Add(-downWindow)
	old := -1
	for i, r := range h.Recommendations {
		if r.At.After(upCutoff) {
			upRec = min(upRec, r.Replicas)
		}
		if r.At.After(downCutoff) {
			downRec = max(downRec, r.Replicas)
		}
		if r.At.Before(upCutoff) && r.At.Before(downCutoff) {
			old = i
		}
	}
	rec := max(n.Current, upRec)
	rec = min(rec, downRec)
	recordRecommendation(h, old, Recommendation{n.Desired, n.Now})
	if n.Desired >= n.Current {
		return rec, scaleUpStabilized
	}
	return rec, scaleDownStabilized
}

// limitByRate bounds desired by the scaling policies and min/max.
func limitByRate(h *History, n normalization, desired int32) limit {
	switch {
	case desired > n.Current:
		highest := ceiling(n.Max, max(scaleUpLimit(n.Current, h.ScaleUps, h.ScaleDowns, n.Behavior.ScaleUp, n.Now), n.Current))
		if desired > highest.replicas {
			return highest
		}
	case desired < n.Current:
		lowest := floor(n.Min, min(scaleDownLimit(n.Current, h.ScaleUps, h.ScaleDowns, n.Behavior.ScaleDown, n.Now), n.Current))
		if desired < lowest.replicas {
			return lowest
		}
	}
	return within(desired)
}

// periodStart is the count at the start of a policy's period: current
// less the changes made within it.
func periodStart(current, periodSeconds int32, ups, downs []ScaleEvent, now time.Time) int32 {
	return current - changeWithin(periodSeconds, ups, now) + changeWithin(periodSeconds, downs, now)
}

func changeWithin(periodSeconds int32, events []ScaleEvent, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var total int32
	for _, e := range events {
		if e.At.After(cutoff) {
			total += e.Change
		}
	}
	return total
}

func selectPolicy(rules *autoscalingv2.HPAScalingRules) autoscalingv2.ScalingPolicySelect {
	if rules.SelectPolicy == nil {
		return autoscalingv2.MaxChangePolicySelect
	}
	return *rules.SelectPolicy
}

// scaleUpLimit is the highest count the scale-up policies allow: the
// largest of their limits (Max), the smallest (Min), or the current count
// (Disabled).
func scaleUpLimit(current int32, ups, downs []ScaleEvent, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	return policyLimit(current, ups, downs, rules, now, true)
}

// scaleDownLimit is the lowest count the scale-down policies allow: the
// smallest of their limits (Max: the largest change), the largest (Min),
// or the current count (Disabled).
func scaleDownLimit(current int32, ups, downs []ScaleEvent, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	return policyLimit(current, ups, downs, rules, now, false)
}

// policyLimit is the count rules allow from current, up or down, each
// policy's from the count at the start of its period.
func policyLimit(current int32, ups, downs []ScaleEvent, rules *autoscalingv2.HPAScalingRules, now time.Time, up bool) int32 {
	if rules == nil || selectPolicy(rules) == autoscalingv2.DisabledPolicySelect {
		return current
	}
	// Max (the largest change) picks the highest limit up, the lowest down.
	largest := selectPolicy(rules) != autoscalingv2.MinChangePolicySelect
	pick, result := minInt32, int32(math.MaxInt32)
	if largest == up {
		pick, result = maxInt32, math.MinInt32
	}
	for _, p := range rules.Policies {
		start := periodStart(current, p.PeriodSeconds, ups, downs, now)
		var proposed int32
		switch {
		case p.Type == autoscalingv2.PodsScalingPolicy && up:
			proposed = start + p.Value
		case p.Type == autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case p.Type == autoscalingv2.PercentScalingPolicy && up:
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		case p.Type == autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

// recordScale remembers a change of scale from prev to next, for an HPA
// with a behavior (one without has no policies to feed), in place of one
// older than the longest period of the direction's policies.
func recordScale(h *History, b *autoscalingv2.HorizontalPodAutoscalerBehavior, prev, next int32, now time.Time) {
	if b == nil || prev == next {
		return
	}
	events, rules, change := &h.ScaleDowns, b.ScaleDown, prev-next
	if next > prev {
		events, rules, change = &h.ScaleUps, b.ScaleUp, next-prev
	}
	var longest int32
	if rules != nil {
		for _, p := range rules.Policies {
			longest = max(longest, p.PeriodSeconds)
		}
	}
	cutoff := now.Add(-time.Duration(longest) * time.Second)
	old := -1
	for i := range *events {
		if (*events)[i].At.Before(cutoff) {
			old = i
		}
	}
	e := ScaleEvent{Change: change, At: now}
	if old >= 0 {
		(*events)[old] = e
	} else {
		*events = append(*events, e)
	}
}
