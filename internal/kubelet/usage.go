package kubelet

import (
	"context"
	"errors"
	"sync"
	"time"

	"plainkube.dev/plainkube/internal/api/stats"
	"plainkube.dev/plainkube/internal/kubelet/usage"
)

// usageState keeps the last two usage samples and the summary made of them
// (package usage), for the agent API's /stats/summary.
type usageState struct {
	mu      sync.Mutex
	last    *usage.Sample
	summary *stats.Summary
}

// errNoStats answers /stats/summary before the first sample.
var errNoStats = errors.New("the node has not sampled its usage yet")

// Summary is the newest usage summary.
func (a *Agent) Summary() (*stats.Summary, error) {
	a.usage.mu.Lock()
	defer a.usage.mu.Unlock()
	if a.usage.summary == nil {
		return nil, errNoStats
	}
	return a.usage.summary, nil
}

// collectUsage samples the node and its containers every stats.Interval
// until ctx ends.
func (a *Agent) collectUsage(ctx context.Context) {
	t := time.NewTicker(stats.Interval)
	defer t.Stop()
	for {
		if cur, err := a.sampleUsage(ctx); err != nil {
			if ctx.Err() == nil {
				a.log.Debug("sampling usage", "err", err)
			}
		} else {
			a.usage.mu.Lock()
			s := usage.Summarize(a.usage.last, cur)
			a.usage.last, a.usage.summary = cur, &s
			a.usage.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sampleUsage reads /proc for the node and the runtime for the running
// containers of ready pod sandboxes.
func (a *Agent) sampleUsage(ctx context.Context) (*usage.Sample, error) {
	node, err := usage.ReadNode("/proc")
	if err != nil {
		return nil, err
	}
	pods, err := a.cri.PodUsage(ctx)
	if err != nil {
		return nil, err
	}
	return &usage.Sample{Time: time.Now(), NodeName: a.opts.NodeName, Node: node, Pods: pods}, nil
}
