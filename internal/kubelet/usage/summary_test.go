package usage

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/api/stats"
)

func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ref := stats.PodReference{Name: "web", Namespace: "default", UID: "u1"}
	sample := func(at time.Time, nodeCPU time.Duration, c1CPU, c2CPU uint64) *Sample {
		return &Sample{Time: at, NodeName: "n1",
			Node: NodeSample{BootTime: t0.Add(-time.Hour), CPU: nodeCPU, MemTotal: 1000, MemFree: 400, InactiveFile: 100},
			Pods: []PodSample{{Ref: ref, StartTime: t0, Containers: []ContainerSample{
				{ID: "a", Name: "app", StartTime: t0, HasCPU: true, CPUTime: at, CPU: c1CPU, HasMemory: true, MemTime: at, WorkingSet: 30, Usage: 50},
				{ID: "b", Name: "side", StartTime: t0, HasCPU: true, CPUTime: at, CPU: c2CPU, HasMemory: true, MemTime: at, WorkingSet: 20, Usage: 25},
			}}}}
	}
	first := sample(t0, 10*time.Second, 1e9, 0)
	s := Summarize(nil, first)
	if s.Node.CPU.UsageNanoCores != nil || *s.Node.CPU.UsageCoreNanoSeconds != 10e9 {
		t.Errorf("first node cpu %+v", s.Node.CPU)
	}
	if *s.Node.Memory.UsageBytes != 600 || *s.Node.Memory.WorkingSetBytes != 500 || *s.Node.Memory.AvailableBytes != 500 {
		t.Errorf("node memory %+v", s.Node.Memory)
	}
	if s.Pods[0].CPU.UsageNanoCores != nil || s.Pods[0].Containers[0].CPU.UsageNanoCores != nil {
		t.Error("a rate without an earlier sample")
	}

	// 5s later: the node used 2.5 CPU-seconds (0.5 cores), app 1s (0.2
	// cores), side 0.5s (0.1 cores).
	second := sample(t0.Add(5*time.Second), 12500*time.Millisecond, 2e9, 5e8)
	s = Summarize(first, second)
	if got := *s.Node.CPU.UsageNanoCores; got != 5e8 {
		t.Errorf("node nanocores %d", got)
	}
	p := s.Pods[0]
	if *p.Containers[0].CPU.UsageNanoCores != 2e8 || *p.Containers[1].CPU.UsageNanoCores != 1e8 || *p.CPU.UsageNanoCores != 3e8 {
		t.Errorf("pod cpu %+v %+v %+v", p.CPU, p.Containers[0].CPU, p.Containers[1].CPU)
	}
	if *p.Memory.WorkingSetBytes != 50 || *p.CPU.UsageCoreNanoSeconds != 25e8 {
		t.Errorf("pod totals %+v %+v", p.Memory, p.CPU)
	}

	// A restarted container (new ID) has no rate yet, nor has its pod.
	third := sample(t0.Add(10*time.Second), 13*time.Second, 3e9, 1e8)
	third.Pods[0].Containers[1].ID = "b2"
	s = Summarize(second, third)
	if s.Pods[0].Containers[1].CPU.UsageNanoCores != nil || s.Pods[0].CPU.UsageNanoCores != nil || *s.Pods[0].Containers[0].CPU.UsageNanoCores != 2e8 {
		t.Errorf("after restart: %+v", s.Pods[0])
	}

	// The JSON is upstream's.
	b, _ := json.Marshal(s)
	for _, want := range []string{`"node":{"nodeName":"n1","startTime":"2026-11-29T09:00:00Z","cpu":{"time":"2026-11-29T10:00:10Z","usageNanoCores":100000000,"usageCoreNanoSeconds":13000000000}`,
		`"podRef":{"name":"web","namespace":"default","uid":"u1"}`, `"workingSetBytes":30`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
}

func TestReadNode(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "stat"), []byte("cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nbtime 1764400000\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "meminfo"), []byte("MemTotal:       2048 kB\nMemFree:         512 kB\nMemAvailable:   1024 kB\nInactive(file):  256 kB\n"), 0o644)
	n, err := ReadNode(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 100+5+50+3+2+1 ticks of 10ms.
	if n.CPU != 1610*time.Millisecond || n.BootTime.Unix() != 1764400000 || n.MemTotal != 2048*1024 || n.MemFree != 512*1024 || n.InactiveFile != 256*1024 {
		t.Errorf("%+v", n)
	}
	if _, err := ReadNode(t.TempDir()); err == nil {
		t.Error("no error for a missing /proc")
	}
	if real, err := ReadNode("/proc"); err != nil || real.CPU == 0 || real.MemTotal == 0 {
		t.Errorf("/proc: %+v %v", real, err)
	}
}
