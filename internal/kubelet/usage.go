package kubelet

import (
	"context"
	"errors"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

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
	rt := a.rt.Runtime
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return nil, err
	}
	cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return nil, err
	}
	st, err := rt.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		return nil, err
	}
	byID := map[string]*runtimeapi.ContainerStats{}
	for _, s := range st {
		if s.Attributes != nil {
			byID[s.Attributes.Id] = s
		}
	}
	sample := &usage.Sample{Time: time.Now(), NodeName: a.opts.NodeName, Node: node}
	pods := map[string]int{} // sandbox ID -> index in sample.Pods
	for _, sb := range sbs {
		if sb.Labels[labelPodUID] == "" || sb.Metadata == nil {
			continue
		}
		pods[sb.Id] = len(sample.Pods)
		sample.Pods = append(sample.Pods, usage.PodSample{
			Ref:       stats.PodReference{Name: sb.Metadata.Name, Namespace: sb.Metadata.Namespace, UID: sb.Metadata.Uid},
			StartTime: unixNano(sb.CreatedAt),
		})
	}
	for _, c := range cs {
		i, ok := pods[c.PodSandboxId]
		if !ok || c.Metadata == nil {
			continue
		}
		cs := usage.ContainerSample{ID: c.Id, Name: c.Metadata.Name, StartTime: unixNano(c.CreatedAt)}
		if s := byID[c.Id]; s != nil {
			if cpu := s.Cpu; cpu != nil && cpu.UsageCoreNanoSeconds != nil {
				cs.HasCPU, cs.CPUTime, cs.CPU = true, unixNano(cpu.Timestamp), cpu.UsageCoreNanoSeconds.Value
			}
			if m := s.Memory; m != nil && m.WorkingSetBytes != nil {
				cs.HasMemory, cs.MemTime, cs.WorkingSet = true, unixNano(m.Timestamp), m.WorkingSetBytes.Value
				cs.Usage, cs.RSS = m.UsageBytes.GetValue(), m.RssBytes.GetValue()
				cs.PageFaults, cs.MajorPageFaults = m.PageFaults.GetValue(), m.MajorPageFaults.GetValue()
			}
		}
		sample.Pods[i].Containers = append(sample.Pods[i].Containers, cs)
	}
	return sample, nil
}
