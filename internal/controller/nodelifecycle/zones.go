package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ZoneState is the health of a zone, as upstream.
type ZoneState string

// Zone states.
const (
	StateNormal            ZoneState = "Normal"
	StateFullDisruption    ZoneState = "FullDisruption"
	StatePartialDisruption ZoneState = "PartialDisruption"
)

// excludeDisruptionLabel keeps a node out of zone health.
const excludeDisruptionLabel = "node.kubernetes.io/exclude-disruption"

// zoneKey is the region and zone of a node, as upstream's GetZoneKey.
func zoneKey(node *corev1.Node) string {
	region, zone := node.Labels[corev1.LabelTopologyRegion], node.Labels[corev1.LabelTopologyZone]
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}

// zoneStats is a zone's state and size.
type zoneStats struct {
	state ZoneState
	size  int
}

// computeZoneState is upstream's ComputeZoneState: fully disrupted if no
// node is ready, partially if more than two are not and they are at least
// threshold of the zone, else normal.
func computeZoneState(ready, notReady int, threshold float64) ZoneState {
	switch {
	case ready == 0 && notReady > 0:
		return StateFullDisruption
	case notReady > 2 && float64(notReady)/float64(notReady+ready) >= threshold:
		return StatePartialDisruption
	default:
		return StateNormal
	}
}

// readyCounts are how many nodes of a zone are ready and how many not.
type readyCounts struct{ ready, notReady int }

// counted is whether and how a node counts in its zone: not at all if it
// is labelled node.kubernetes.io/exclude-disruption.
func counted(n *corev1.Node) (zone string, ready, ok bool) {
	if _, excluded := n.Labels[excludeDisruptionLabel]; excluded {
		return "", false, false
	}
	return zoneKey(n), readyStatus(n) == corev1.ConditionTrue, true
}

// addTo counts a node of zone, ready or not (n = -1 takes it away).
func addTo(byZone map[string]readyCounts, zone string, ready bool, n int) {
	c := byZone[zone]
	if ready {
		c.ready += n
	} else {
		c.notReady += n
	}
	if c.ready == 0 && c.notReady == 0 {
		delete(byZone, zone)
		return
	}
	byZone[zone] = c
}

// zoneStates groups nodes by zone and computes each zone's state; nodes
// labelled node.kubernetes.io/exclude-disruption do not count. It also
// reports whether every zone is fully disrupted (false with no zones).
func zoneStates(nodes []*corev1.Node, threshold float64) (map[string]zoneStats, bool) {
	byZone := map[string]readyCounts{}
	for _, n := range nodes {
		if zone, ready, ok := counted(n); ok {
			addTo(byZone, zone, ready, 1)
		}
	}
	return statesOf(byZone, threshold)
}

// statesOf is each zone's state from its counts, and whether every zone is
// fully disrupted (false with no zones).
func statesOf(byZone map[string]readyCounts, threshold float64) (map[string]zoneStats, bool) {
	out := make(map[string]zoneStats, len(byZone))
	all := len(byZone) > 0
	for k, c := range byZone {
		s := computeZoneState(c.ready, c.notReady, threshold)
		out[k] = zoneStats{state: s, size: c.ready + c.notReady}
		if s != StateFullDisruption {
			all = false
		}
	}
	return out, all
}

// rates are the tainting rates, as upstream's flags.
type rates struct {
	qps, secondaryQPS     float64
	largeClusterThreshold int
}

// taintQPS is how many nodes per second of a zone may get a NoExecute
// taint, as upstream's setLimiterInZone: the normal rate, also in a fully
// disrupted zone (when others are not); in a partially disrupted zone, the
// secondary rate if the zone is large, else none.
func taintQPS(z zoneStats, r rates) float64 {
	if z.state == StatePartialDisruption {
		if z.size > r.largeClusterThreshold {
			return r.secondaryQPS
		}
		return 0
	}
	return r.qps
}

// bucket is a token bucket with a burst of one, driven by the caller's
// clock.
type bucket struct {
	tokens float64
	last   time.Time
}

func newBucket(now time.Time) *bucket { return &bucket{tokens: 1, last: now} }

// take takes a token at qps if one is there; otherwise it says how long
// until one is (zero if never: qps is zero).
func (b *bucket) take(now time.Time, qps float64) (bool, time.Duration) {
	if qps <= 0 {
		return false, 0
	}
	if now.After(b.last) {
		b.tokens = min(1, b.tokens+now.Sub(b.last).Seconds()*qps)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / qps * float64(time.Second))
}

// refund gives back a token taken for a write that failed.
func (b *bucket) refund() { b.tokens = min(1, b.tokens+1) }
