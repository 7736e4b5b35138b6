package runtime

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"plainkube.dev/plainkube/internal/api/stats"
	"plainkube.dev/plainkube/internal/kubelet/usage"
)

// PodUsage samples the usage of the running containers of ready pod
// sandboxes.
func (r *Runtime) PodUsage(ctx context.Context) ([]usage.PodSample, error) {
	rt := r.RuntimeService
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
	var sample struct{ Pods []usage.PodSample }
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
	return sample.Pods, nil
}
