package podautoscaler

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"
)

func ago(d time.Duration) time.Time { return t0.Add(-d) }

func rules(window int32, sel autoscalingv2.ScalingPolicySelect, policies ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(window), SelectPolicy: ptr.To(sel), Policies: policies}
}

func podsPolicy(n, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: n, PeriodSeconds: period}
}

func percent(n, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: n, PeriodSeconds: period}
}

// upstreamDefaults is the behavior the API fills in for an HPA that gives
// one with nothing in it.
func upstreamDefaults() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: rules(0, autoscalingv2.MaxChangePolicySelect, podsPolicy(4, 15), percent(100, 15)),
		ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{percent(100, 15)}},
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct {
		name                       string
		history                    History
		behavior                   *autoscalingv2.HorizontalPodAutoscalerBehavior
		current, desired, min, max int32
		want                       int32
		wantAble, wantLimited      string // reason of AbleToScale, ScalingLimited (status/reason)
	}{{
		name: "no behavior: within range", current: 3, desired: 5, min: 1, max: 10, want: 5,
		wantAble: "ReadyForNewScale", wantLimited: "False/DesiredWithinRange",
	}, {
		name: "no behavior: up at most to 4 from 1", current: 1, desired: 10, min: 1, max: 10, want: 4,
		wantAble: "ReadyForNewScale", wantLimited: "True/ScaleUpLimit",
	}, {
		name: "no behavior: up at most to twice", current: 3, desired: 10, min: 1, max: 10, want: 6,
		wantAble: "ReadyForNewScale", wantLimited: "True/ScaleUpLimit",
	}, {
		name: "no behavior: max", current: 3, desired: 10, min: 1, max: 5, want: 5,
		wantAble: "ReadyForNewScale", wantLimited: "True/TooManyReplicas",
	}, {
		name: "no behavior: min", current: 3, desired: 1, min: 2, max: 5, want: 2,
		wantAble: "ReadyForNewScale", wantLimited: "True/TooFewReplicas",
	}, {
		name:    "no behavior: the highest recommendation of the last 5 minutes",
		history: History{Recommendations: []Recommendation{{7, ago(6 * time.Minute)}, {5, ago(4 * time.Minute)}, {3, ago(time.Minute)}}},
		current: 5, desired: 2, min: 1, max: 10, want: 5,
		wantAble: "ScaleDownStabilized", wantLimited: "False/DesiredWithinRange",
	}, {
		name:    "no behavior: recommendations older than 5 minutes are forgotten",
		history: History{Recommendations: []Recommendation{{7, ago(6 * time.Minute)}, {3, ago(time.Minute)}}},
		current: 5, desired: 2, min: 1, max: 10, want: 3,
		wantAble: "ScaleDownStabilized", wantLimited: "False/DesiredWithinRange",
	}, {
		name:     "behavior: the scale-up window holds the lowest recent recommendation",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(60, autoscalingv2.MaxChangePolicySelect, podsPolicy(10, 15)), ScaleDown: upstreamDefaults().ScaleDown},
		history:  History{Recommendations: []Recommendation{{4, ago(30 * time.Second)}, {2, ago(90 * time.Second)}}},
		current:  3, desired: 8, min: 1, max: 10, want: 4,
		wantAble: "ScaleUpStabilized", wantLimited: "False/DesiredWithinRange",
	}, {
		name:     "behavior: the scale-down window, unset, is the controller's 5 minutes",
		behavior: upstreamDefaults(),
		history:  History{Recommendations: []Recommendation{{6, ago(4 * time.Minute)}}},
		current:  6, desired: 2, min: 1, max: 10, want: 6,
		wantAble: "ScaleDownStabilized", wantLimited: "False/DesiredWithinRange",
	}, {
		name: "behavior: a short scale-down window",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: upstreamDefaults().ScaleUp,
			ScaleDown: rules(10, autoscalingv2.MaxChangePolicySelect, percent(100, 15))},
		history: History{Recommendations: []Recommendation{{6, ago(20 * time.Second)}, {4, ago(5 * time.Second)}}},
		current: 6, desired: 2, min: 1, max: 10, want: 4,
		wantAble: "ScaleDownStabilized", wantLimited: "False/DesiredWithinRange",
	}, {
		name:     "behavior: Max picks the policy allowing the most (100 % of 10 over 4 pods)",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(0, autoscalingv2.MaxChangePolicySelect, podsPolicy(4, 60), percent(100, 60)), ScaleDown: upstreamDefaults().ScaleDown},
		current:  10, desired: 50, min: 1, max: 100, want: 20,
		wantAble: "ReadyForNewScale", wantLimited: "True/ScaleUpLimit",
	}, {
		name:     "behavior: Min picks the policy allowing the least",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(0, autoscalingv2.MinChangePolicySelect, podsPolicy(4, 60), percent(100, 60)), ScaleDown: upstreamDefaults().ScaleDown},
		current:  10, desired: 50, min: 1, max: 100, want: 14,
		wantAble: "ReadyForNewScale", wantLimited: "True/ScaleUpLimit",
	}, {
		name:     "behavior: Disabled scale-up",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(0, autoscalingv2.DisabledPolicySelect, podsPolicy(4, 60)), ScaleDown: upstreamDefaults().ScaleDown},
		current:  10, desired: 50, min: 1, max: 100, want: 10,
		wantAble: "ReadyForNewScale", wantLimited: "True/ScaleUpLimit",
	}, {
		name:     "behavior: the scale-ups of the period count against its policy",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(0, autoscalingv2.MaxChangePolicySelect, podsPolicy(4, 60)), ScaleDown: upstreamDefaults().ScaleDown},
		history:  History{ScaleUps: []ScaleEvent{{3, ago(30 * time.Second)}, {5, ago(90 * time.Second)}}},
		// the period started at 10-3 = 7: at most 11.
		current: 10, desired: 50, min: 1, max: 100, want: 11,
		wantAble: "ReadyForNewScale", wantLimited: "True/ScaleUpLimit",
	}, {
		name:     "behavior: scale-up below max: TooManyReplicas",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(0, autoscalingv2.MaxChangePolicySelect, podsPolicy(40, 60)), ScaleDown: upstreamDefaults().ScaleDown},
		current:  10, desired: 50, min: 1, max: 20, want: 20,
		wantAble: "ReadyForNewScale", wantLimited: "True/TooManyReplicas",
	}, {
		name: "behavior: Max on scale-down picks the largest change (50 % of 10 over 3 pods)",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: upstreamDefaults().ScaleUp,
			ScaleDown: rules(0, autoscalingv2.MaxChangePolicySelect, podsPolicy(3, 60), percent(50, 60))},
		current: 10, desired: 1, min: 1, max: 20, want: 5,
		wantAble: "ReadyForNewScale", wantLimited: "True/ScaleDownLimit",
	}, {
		name: "behavior: Min on scale-down picks the smallest change",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: upstreamDefaults().ScaleUp,
			ScaleDown: rules(0, autoscalingv2.MinChangePolicySelect, podsPolicy(3, 60), percent(50, 60))},
		current: 10, desired: 1, min: 1, max: 20, want: 7,
		wantAble: "ReadyForNewScale", wantLimited: "True/ScaleDownLimit",
	}, {
		name: "behavior: the scale-downs of the period count against its policy",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: upstreamDefaults().ScaleUp,
			ScaleDown: rules(0, autoscalingv2.MaxChangePolicySelect, podsPolicy(3, 60))},
		history: History{ScaleDowns: []ScaleEvent{{2, ago(10 * time.Second)}}},
		// the period started at 8+2 = 10: at least 7.
		current: 8, desired: 1, min: 1, max: 20, want: 7,
		wantAble: "ReadyForNewScale", wantLimited: "True/ScaleDownLimit",
	}, {
		name: "behavior: Disabled scale-down",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: upstreamDefaults().ScaleUp,
			ScaleDown: rules(0, autoscalingv2.DisabledPolicySelect, percent(100, 15))},
		current: 8, desired: 1, min: 1, max: 20, want: 8,
		wantAble: "ReadyForNewScale", wantLimited: "True/ScaleDownLimit",
	}, {
		name: "behavior: down to min",
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: upstreamDefaults().ScaleUp,
			ScaleDown: rules(0, autoscalingv2.MaxChangePolicySelect, percent(100, 15))},
		current: 8, desired: 1, min: 3, max: 20, want: 3,
		wantAble: "ReadyForNewScale", wantLimited: "True/TooFewReplicas",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.history.clone()
			got, conds := normalize(&h, normalization{Current: c.current, Desired: c.desired, Min: c.min, Max: c.max,
				Behavior: c.behavior, DownscaleWindow: 5 * time.Minute, Now: t0})
			if got != c.want {
				t.Errorf("= %d, want %d", got, c.want)
			}
			if len(conds) != 2 || conds[0].Type != autoscalingv2.AbleToScale || conds[0].Reason != c.wantAble ||
				conds[1].Type != autoscalingv2.ScalingLimited || string(conds[1].Status)+"/"+conds[1].Reason != c.wantLimited {
				t.Errorf("conditions %+v, want AbleToScale %s, ScalingLimited %s", conds, c.wantAble, c.wantLimited)
			}
			last := h.Recommendations[len(h.Recommendations)-1]
			found := false
			for _, r := range h.Recommendations {
				found = found || (r.Replicas == c.desired && r.At.Equal(t0))
			}
			if !found {
				t.Errorf("recommendation %d not recorded: %v (last %v)", c.desired, h.Recommendations, last)
			}
			if len(h.Recommendations) > len(c.history.Recommendations)+1 {
				t.Errorf("history grew by more than one: %v", h.Recommendations)
			}
		})
	}
}

// TestStabilizationOverTime steps one HPA through a minute with the
// API's default behavior and a 20 s scale-down window: a spike scales up
// at once; a dip is ignored until it has lasted the window.
func TestStabilizationOverTime(t *testing.T) {
	b := upstreamDefaults()
	b.ScaleDown.StabilizationWindowSeconds = ptr.To[int32](20)
	var h History
	current := int32(2)
	steps := []struct {
		at      time.Duration
		desired int32
		want    int32
	}{
		{0, 2, 2},
		{5 * time.Second, 6, 6},  // up at once (4 pods or 100 % in 15 s)
		{10 * time.Second, 3, 6}, // down held by the 6 of 5 s ago
		{20 * time.Second, 3, 6},
		{26 * time.Second, 3, 3},   // the 6 is more than 20 s old
		{30 * time.Second, 9, 9},   // the period started at 3+3 = 6: up to 12
		{35 * time.Second, 40, 12}, // still 6 at the period's start: +100 %
		{55 * time.Second, 40, 24}, // a new period started at 12

	}
	for _, s := range steps {
		now := t0.Add(s.at)
		got, _ := normalize(&h, normalization{Current: current, Desired: s.desired, Min: 1, Max: 40, Behavior: b, DownscaleWindow: 5 * time.Minute, Now: now})
		if got != s.want {
			t.Fatalf("at %v: desired %d from %d = %d, want %d", s.at, s.desired, current, got, s.want)
		}
		recordScale(&h, b, current, got, now)
		current = got
	}
	if len(h.Recommendations) > 5 {
		t.Errorf("old recommendations are not reused: %d kept", len(h.Recommendations))
	}
}

func TestRecordScaleReusesOutdatedEvents(t *testing.T) {
	b := upstreamDefaults() // periods of 15 s
	h := History{ScaleUps: []ScaleEvent{{2, ago(time.Minute)}, {1, ago(5 * time.Second)}}}
	recordScale(&h, b, 3, 7, t0)
	if len(h.ScaleUps) != 2 || h.ScaleUps[0] != (ScaleEvent{4, t0}) {
		t.Errorf("scale-ups = %v", h.ScaleUps)
	}
	recordScale(&h, b, 7, 5, t0)
	if len(h.ScaleDowns) != 1 || h.ScaleDowns[0] != (ScaleEvent{2, t0}) {
		t.Errorf("scale-downs = %v", h.ScaleDowns)
	}
	recordScale(&h, nil, 5, 9, t0)
	if len(h.ScaleUps) != 2 {
		t.Errorf("an HPA without behavior recorded a scale event: %v", h.ScaleUps)
	}
}
