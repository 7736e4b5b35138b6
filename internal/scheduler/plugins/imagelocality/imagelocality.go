package imagelocality

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Name is the plugin's name.
const Name = "ImageLocality"

// Thresholds as upstream: images smaller than 23 MiB in total score 0, and
// the score saturates at 1000 MiB per container.
const (
	mb                    int64 = 1024 * 1024
	minThreshold                = 23 * mb
	maxContainerThreshold       = 1000 * mb
)

// ImageLocality is the plugin.
type ImageLocality struct{ h framework.Handle }

var (
	_ framework.PreScorePlugin = (*ImageLocality)(nil)
	_ framework.ScorePlugin    = (*ImageLocality)(nil)
)

const preScoreStateKey = "PreScore" + Name

type preScoreState struct{ images []string }

func (s *preScoreState) Clone() framework.StateData { return s }

// New returns the plugin; it takes no arguments.
func New(_ json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	return &ImageLocality{h: h}, nil
}

// Name implements framework.Plugin.
func (*ImageLocality) Name() string { return Name }

// PreScore implements framework.PreScorePlugin: it normalizes the pod's
// image names once.
func (pl *ImageLocality) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(preScoreStateKey, &preScoreState{images: imagesOf(pod)})
	return nil
}

func imagesOf(pod *v1.Pod) []string {
	out := make([]string, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for _, c := range pod.Spec.InitContainers {
		out = append(out, framework.NormalizedImageName(c.Image))
	}
	for _, c := range pod.Spec.Containers {
		out = append(out, framework.NormalizedImageName(c.Image))
	}
	return out
}

// Score implements framework.ScorePlugin: the sizes of the pod's images
// present on the node, each scaled by the share of nodes that have it.
func (pl *ImageLocality) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	snap := pl.h.Snapshot()
	total := snap.NumNodes()
	if total == 0 {
		return 0, nil
	}
	s, err := framework.ReadAs[*preScoreState](state, preScoreStateKey)
	if err != nil {
		s = &preScoreState{images: imagesOf(pod)}
	}
	var sum int64
	for _, name := range s.images {
		if size, ok := ni.ImageSizes[name]; ok {
			spread := float64(snap.ImageNumNodes(name)) / float64(total)
			sum += int64(float64(size) * spread)
		}
	}
	return calculatePriority(sum, len(s.images)), nil
}

func calculatePriority(sum int64, numContainers int) int64 {
	maxThreshold := maxContainerThreshold * int64(numContainers)
	if sum < minThreshold {
		sum = minThreshold
	} else if sum > maxThreshold {
		sum = maxThreshold
	}
	if maxThreshold <= minThreshold {
		return 0
	}
	return framework.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold)
}

// ScoreExtensions implements framework.ScorePlugin.
func (*ImageLocality) ScoreExtensions() framework.ScoreExtensions { return nil }
