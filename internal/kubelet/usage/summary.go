package usage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/api/stats"
)

// Sample is one reading of cumulative counters.
type Sample struct {
	Time     time.Time
	NodeName string
	Node     NodeSample
	Pods     []PodSample
}

// NodeSample is what /proc shows of the node.
type NodeSample struct {
	BootTime time.Time
	// CPU is the CPU time used by all processors (not idle or waiting).
	CPU time.Duration
	// Memory from /proc/meminfo, in bytes.
	MemTotal, MemFree, InactiveFile uint64
}

// PodSample is one pod's running containers.
type PodSample struct {
	Ref        stats.PodReference
	StartTime  time.Time
	Containers []ContainerSample
}

// ContainerSample is what the runtime shows of one container. HasCPU and
// HasMemory are false when the runtime reported no such figures.
type ContainerSample struct {
	ID, Name                                            string
	StartTime                                           time.Time
	HasCPU                                              bool
	CPUTime                                             time.Time // when CPU was read
	CPU                                                 uint64    // cumulative CPU time, ns
	HasMemory                                           bool
	MemTime                                             time.Time
	WorkingSet, Usage, RSS, PageFaults, MajorPageFaults uint64
}

// rate is the CPU used between two cumulative readings, in nanocores;
// false when it cannot be known (no earlier reading, a counter reset, no
// time between them).
func rate(prevCPU, curCPU uint64, prevT, curT time.Time) (uint64, bool) {
	dt := curT.Sub(prevT)
	if dt <= 0 || curCPU < prevCPU {
		return 0, false
	}
	return uint64(float64(curCPU-prevCPU) / dt.Seconds()), true
}

func ptr(v uint64) *uint64 { return &v }

// Summarize is the summary of cur, with CPU rates from prev (nil: the
// first sample, no rates yet).
func Summarize(prev *Sample, cur *Sample) stats.Summary {
	t := metav1.NewTime(cur.Time)
	n := cur.Node
	s := stats.Summary{Pods: []stats.PodStats{}}
	s.Node = stats.NodeStats{NodeName: cur.NodeName, StartTime: metav1.NewTime(n.BootTime),
		CPU: &stats.CPUStats{Time: t, UsageCoreNanoSeconds: ptr(uint64(n.CPU))}}
	if prev != nil {
		if r, ok := rate(uint64(prev.Node.CPU), uint64(n.CPU), prev.Time, cur.Time); ok {
			s.Node.CPU.UsageNanoCores = ptr(r)
		}
	}
	if n.MemTotal > 0 {
		usage := n.MemTotal - min(n.MemFree, n.MemTotal)
		ws := usage - min(n.InactiveFile, usage)
		s.Node.Memory = &stats.MemoryStats{Time: t, UsageBytes: ptr(usage), WorkingSetBytes: ptr(ws), AvailableBytes: ptr(n.MemTotal - ws)}
	}
	before := map[string]ContainerSample{}
	if prev != nil {
		for _, p := range prev.Pods {
			for _, c := range p.Containers {
				before[c.ID] = c
			}
		}
	}
	for _, p := range cur.Pods {
		ps := stats.PodStats{PodRef: p.Ref, StartTime: metav1.NewTime(p.StartTime), Containers: []stats.ContainerStats{}}
		var podCPU, podRate, podWS, podUsage, podRSS uint64
		allRates, anyCPU, anyMem := true, false, false
		for _, c := range p.Containers {
			cs := stats.ContainerStats{Name: c.Name, StartTime: metav1.NewTime(c.StartTime)}
			if c.HasCPU {
				anyCPU = true
				cs.CPU = &stats.CPUStats{Time: metav1.NewTime(c.CPUTime), UsageCoreNanoSeconds: ptr(c.CPU)}
				podCPU += c.CPU
				if b, ok := before[c.ID]; ok && b.HasCPU {
					if r, ok := rate(b.CPU, c.CPU, b.CPUTime, c.CPUTime); ok {
						cs.CPU.UsageNanoCores = ptr(r)
						podRate += r
					} else {
						allRates = false
					}
				} else {
					allRates = false
				}
			}
			if c.HasMemory {
				anyMem = true
				cs.Memory = &stats.MemoryStats{Time: metav1.NewTime(c.MemTime), WorkingSetBytes: ptr(c.WorkingSet), UsageBytes: ptr(c.Usage),
					RSSBytes: ptr(c.RSS), PageFaults: ptr(c.PageFaults), MajorPageFaults: ptr(c.MajorPageFaults)}
				podWS, podUsage, podRSS = podWS+c.WorkingSet, podUsage+c.Usage, podRSS+c.RSS
			}
			ps.Containers = append(ps.Containers, cs)
		}
		if anyCPU {
			ps.CPU = &stats.CPUStats{Time: t, UsageCoreNanoSeconds: ptr(podCPU)}
			if allRates {
				ps.CPU.UsageNanoCores = ptr(podRate)
			}
		}
		if anyMem {
			ps.Memory = &stats.MemoryStats{Time: t, WorkingSetBytes: ptr(podWS), UsageBytes: ptr(podUsage), RSSBytes: ptr(podRSS)}
		}
		s.Pods = append(s.Pods, ps)
	}
	return s
}

// userHZ is the unit of /proc/stat's CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

// ReadNode reads the node's CPU time, boot time and memory under procDir
// (/proc).
func ReadNode(procDir string) (NodeSample, error) {
	var n NodeSample
	stat, err := os.ReadFile(filepath.Join(procDir, "stat"))
	if err != nil {
		return n, err
	}
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "cpu":
			// user nice system idle iowait irq softirq steal ...: all but
			// idle and iowait are time used (guest time is in user).
			if len(f) < 9 {
				return n, fmt.Errorf("%s/stat: short cpu line", procDir)
			}
			var ticks uint64
			for i, v := range f[1:9] {
				if i == 3 || i == 4 {
					continue
				}
				x, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return n, fmt.Errorf("%s/stat: %w", procDir, err)
				}
				ticks += x
			}
			n.CPU = time.Duration(ticks) * (time.Second / userHZ)
		case "btime":
			if len(f) > 1 {
				sec, _ := strconv.ParseInt(f[1], 10, 64)
				n.BootTime = time.Unix(sec, 0)
			}
		}
	}
	mem, err := os.ReadFile(filepath.Join(procDir, "meminfo"))
	if err != nil {
		return n, err
	}
	sc = bufio.NewScanner(bytes.NewReader(mem))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "MemTotal:":
			n.MemTotal = kb * 1024
		case "MemFree:":
			n.MemFree = kb * 1024
		case "Inactive(file):":
			n.InactiveFile = kb * 1024
		}
	}
	if n.MemTotal == 0 {
		return n, fmt.Errorf("%s/meminfo: no MemTotal", procDir)
	}
	return n, nil
}
