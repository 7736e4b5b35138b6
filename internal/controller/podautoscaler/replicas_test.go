package podautoscaler

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// testPod is a pod for the calculation: Running and ready since long
// before t0 (past the CPU initialization period), one container "app"
// requesting the given CPU and memory.
type testPod struct {
	name      string
	cpu, mem  string // requests
	phase     corev1.PodPhase
	ready     corev1.ConditionStatus // "": no Ready condition
	started   time.Duration          // before t0
	readyAt   time.Duration          // before t0: the Ready condition's transition
	deleted   bool
	sidecarCP string // a restartable init container "side" requesting this CPU
}

func (tp testPod) pod() *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tp.name, Namespace: "ns"}}
	req := corev1.ResourceList{}
	if tp.cpu != "" {
		req[corev1.ResourceCPU] = resource.MustParse(tp.cpu)
	}
	if tp.mem != "" {
		req[corev1.ResourceMemory] = resource.MustParse(tp.mem)
	}
	p.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: req}}}
	if tp.sidecarCP != "" {
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: &always,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(tp.sidecarCP)}}}}
	}
	p.Status.Phase = tp.phase
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodRunning
	}
	started, readyAt := tp.started, tp.readyAt
	if started == 0 {
		started = time.Hour
	}
	if readyAt == 0 {
		readyAt = started - 10*time.Second
	}
	p.Status.StartTime = &metav1.Time{Time: t0.Add(-started)}
	status := tp.ready
	if status == "" {
		status = corev1.ConditionTrue
	}
	if status != "none" {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Time{Time: t0.Add(-readyAt)}}}
	}
	if tp.deleted {
		p.DeletionTimestamp = &metav1.Time{Time: t0}
	}
	return p
}

func pods(tps ...testPod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(tps))
	for i, tp := range tps {
		out[i] = tp.pod()
	}
	return out
}

// samples of the named pods (milli-units), taken at t0 over 30 s.
func samplesOf(values map[string]int64) PodMetrics {
	out := PodMetrics{}
	for name, v := range values {
		out[name] = PodMetric{Timestamp: t0, Window: 30 * time.Second, Value: v}
	}
	return out
}

var defaultTol = Tolerances{Down: 0.1, Up: 0.1}

func TestResourceUtilization(t *testing.T) {
	cases := []struct {
		name        string
		pods        []testPod
		samples     map[string]int64
		sampleAt    time.Time // zero: t0
		current     int32
		target      int32
		resource    corev1.ResourceName
		container   string
		tol         Tolerances
		want        int32
		wantUtil    int32
		wantAverage int64
		wantErr     string
	}{{
		name:    "scale up: 50 % against 30 %",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1"}, {name: "c", cpu: "1"}},
		samples: map[string]int64{"a": 300, "b": 500, "c": 700},
		current: 3, target: 30, want: 5, wantUtil: 50, wantAverage: 500,
	}, {
		name:    "scale down: 10 % against 50 %",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1"}, {name: "c", cpu: "1"}, {name: "d", cpu: "1"}},
		samples: map[string]int64{"a": 100, "b": 100, "c": 100, "d": 100},
		current: 4, target: 50, want: 1, wantUtil: 10, wantAverage: 100,
	}, {
		name:    "within the tolerance: 105 % against 100 %",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1"}},
		samples: map[string]int64{"a": 1050, "b": 1050},
		current: 2, target: 100, want: 2, wantUtil: 105, wantAverage: 1050,
	}, {
		name:    "a wider scale-up tolerance of the HPA's own",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1"}},
		samples: map[string]int64{"a": 1400, "b": 1400},
		current: 2, target: 100, tol: Tolerances{Down: 0.1, Up: 0.5}, want: 2, wantUtil: 140, wantAverage: 1400,
	}, {
		// 0.95 is out of tolerance, but 0.95 × 4 rounds up to 4.
		name:    "a zero scale-down tolerance",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1"}, {name: "c", cpu: "1"}, {name: "d", cpu: "1"}},
		samples: map[string]int64{"a": 950, "b": 950, "c": 950, "d": 950},
		current: 4, target: 100, tol: Tolerances{Down: 0, Up: 0.1}, want: 4, wantUtil: 95, wantAverage: 950,
	}, {
		name:    "a zero scale-down tolerance with room to shrink",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1"}, {name: "c", cpu: "1"}, {name: "d", cpu: "1"}},
		samples: map[string]int64{"a": 700, "b": 700, "c": 700, "d": 700},
		current: 4, target: 100, tol: Tolerances{Down: 0, Up: 0.1}, want: 3, wantUtil: 70, wantAverage: 700,
	}, {
		name: "a pod not ready counts as using nothing on a scale-up",
		pods: []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1"},
			{name: "c", cpu: "1", ready: corev1.ConditionFalse, started: time.Minute, readyAt: time.Minute}},
		samples: map[string]int64{"a": 1000, "b": 1000, "c": 1000},
		// ready: 100 % / 50 % = 2; with c at 0: 66 % / 50 % = 1.33 of 3.
		current: 3, target: 50, want: 4, wantUtil: 100, wantAverage: 1000,
	}, {
		name:    "a pending pod is not ready",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1", phase: corev1.PodPending}},
		samples: map[string]int64{"a": 1000},
		// 100 % / 50 % = 2; with b at 0: 50 % / 50 %: within tolerance.
		current: 2, target: 50, want: 2, wantUtil: 100, wantAverage: 1000,
	}, {
		name:    "pods not ready that would turn a scale-up into a scale-down change nothing",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1", phase: corev1.PodPending}, {name: "c", cpu: "1", phase: corev1.PodPending}},
		samples: map[string]int64{"a": 600},
		// 60 % / 50 % = 1.2; with b and c at 0: 20 % / 50 % = 0.4.
		current: 3, target: 50, want: 3, wantUtil: 60, wantAverage: 600,
	}, {
		name:    "pods not ready are left out of a scale-down",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1"}, {name: "c", cpu: "1", phase: corev1.PodPending}},
		samples: map[string]int64{"a": 100, "b": 100},
		current: 3, target: 50, want: 1, wantUtil: 10, wantAverage: 100,
	}, {
		name:    "a pod without a sample counts as using its request on a scale-down",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1"}, {name: "c", cpu: "1"}, {name: "d", cpu: "1"}},
		samples: map[string]int64{"a": 100, "b": 100, "c": 100},
		// 10 % / 50 % = 0.2; with d at 100 %: 32.5 % → 32 % / 50 % = 0.64 of 4 = 2.56.
		current: 4, target: 50, want: 3, wantUtil: 10, wantAverage: 100,
	}, {
		name:    "a pod without a sample counts as using the target above 100 % on a scale-down",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1"}},
		samples: map[string]int64{"a": 500},
		// 50 % / 200 % = 0.25; with b at 200 %: 125 % / 200 % = 0.625 of 2 = 1.25.
		current: 2, target: 200, want: 2, wantUtil: 50, wantAverage: 500,
	}, {
		name:    "a pod without a sample counts as using nothing on a scale-up",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1"}, {name: "c", cpu: "1"}},
		samples: map[string]int64{"a": 2000, "b": 2000},
		// 200 % / 50 % = 4; with c at 0: 133 % / 50 % = 2.66 of 3 = 7.98.
		current: 3, target: 50, want: 8, wantUtil: 200, wantAverage: 2000,
	}, {
		name:    "deleted and failed pods are ignored",
		pods:    []testPod{{name: "a", cpu: "1"}, {name: "b", cpu: "1", deleted: true}, {name: "c", cpu: "1", phase: corev1.PodFailed}},
		samples: map[string]int64{"a": 1000, "b": 0, "c": 0},
		current: 3, target: 50, want: 2, wantUtil: 100, wantAverage: 1000,
	}, {
		name: "a sample that may predate readiness, within the initialization period, is not used",
		pods: []testPod{{name: "a", cpu: "1"},
			{name: "b", cpu: "1", started: time.Minute, readyAt: 20 * time.Second}}, // sample window 30 s
		samples: map[string]int64{"a": 1000, "b": 1000},
		current: 2, target: 50, want: 2, wantUtil: 100, wantAverage: 1000, // b at 0: 50 %
	}, {
		name: "a sample taken a window after readiness, within the initialization period, is used",
		pods: []testPod{{name: "a", cpu: "1"},
			{name: "b", cpu: "1", started: time.Minute, readyAt: 40 * time.Second}},
		samples: map[string]int64{"a": 1000, "b": 1000},
		current: 2, target: 50, want: 4, wantUtil: 100, wantAverage: 1000,
	}, {
		name: "after the initialization period, a pod that was ready once and is not now counts",
		pods: []testPod{{name: "a", cpu: "1"},
			{name: "b", cpu: "1", ready: corev1.ConditionFalse, started: 10 * time.Minute, readyAt: time.Minute}},
		samples: map[string]int64{"a": 1000, "b": 1000},
		current: 2, target: 50, want: 4, wantUtil: 100, wantAverage: 1000,
	}, {
		name: "after the initialization period, a pod never ready (within the readiness delay) does not",
		pods: []testPod{{name: "a", cpu: "1"},
			{name: "b", cpu: "1", ready: corev1.ConditionFalse, started: 10 * time.Minute, readyAt: 10*time.Minute - 10*time.Second}},
		samples: map[string]int64{"a": 1000, "b": 1000},
		current: 2, target: 50, want: 2, wantUtil: 100, wantAverage: 1000,
	}, {
		name:    "memory ignores readiness",
		pods:    []testPod{{name: "a", mem: "100Mi"}, {name: "b", mem: "100Mi", ready: corev1.ConditionFalse, started: time.Minute, readyAt: time.Minute}},
		samples: map[string]int64{"a": 100 << 20 * 1000, "b": 100 << 20 * 1000},
		current: 2, target: 50, resource: corev1.ResourceMemory, want: 4, wantUtil: 100, wantAverage: 100 << 20 * 1000,
	}, {
		name:    "a restartable init container's request counts",
		pods:    []testPod{{name: "a", cpu: "500m", sidecarCP: "500m"}},
		samples: map[string]int64{"a": 1000},
		current: 1, target: 50, want: 2, wantUtil: 100, wantAverage: 1000,
	}, {
		name:    "one container's request",
		pods:    []testPod{{name: "a", cpu: "500m", sidecarCP: "500m"}},
		samples: map[string]int64{"a": 500}, container: "app",
		current: 1, target: 50, want: 2, wantUtil: 100, wantAverage: 500,
	}, {
		name: "a missing request is an error", pods: []testPod{{name: "a"}}, samples: map[string]int64{"a": 1},
		current: 1, target: 50, wantErr: "missing request for cpu in container app of Pod a",
	}, {
		name: "a missing container is an error", pods: []testPod{{name: "a", cpu: "1"}}, samples: map[string]int64{"a": 1},
		current: 1, target: 50, container: "web", wantErr: "container web not found in Pod a",
	}, {
		name: "no pods", current: 1, target: 50, wantErr: "no pods returned by selector while calculating replica count",
	}, {
		name: "no ready pod", pods: []testPod{{name: "a", cpu: "1", phase: corev1.PodPending}},
		samples: map[string]int64{"a": 1}, current: 1, target: 50,
		wantErr: "did not receive metrics for targeted pods (pods might be unready)",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := c.resource
			if res == "" {
				res = corev1.ResourceCPU
			}
			tol := c.tol
			if tol == (Tolerances{}) {
				tol = defaultTol
			}
			in := Pods{Pods: pods(c.pods...), Metrics: samplesOf(c.samples), Now: t0, Readiness: DefaultReadiness}
			got, util, avg, err := ResourceUtilization(in, c.current, c.target, res, c.container, tol)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || util != c.wantUtil || avg != c.wantAverage {
				t.Errorf("= %d replicas, %d %%, average %d; want %d, %d %%, %d", got, util, avg, c.want, c.wantUtil, c.wantAverage)
			}
		})
	}
}

func TestAverageValue(t *testing.T) {
	cases := []struct {
		name     string
		pods     []testPod
		samples  map[string]int64
		current  int32
		target   int64
		resource corev1.ResourceName
		want     int32
		wantAvg  int64
	}{
		{"twice the target", []testPod{{name: "a"}, {name: "b"}}, map[string]int64{"a": 500, "b": 500}, 2, 250, corev1.ResourceCPU, 4, 500},
		{"within tolerance", []testPod{{name: "a"}, {name: "b"}}, map[string]int64{"a": 260, "b": 260}, 2, 250, corev1.ResourceCPU, 2, 260},
		{"a pod without a sample uses the target on a scale-down", []testPod{{name: "a"}, {name: "b"}, {name: "c"}},
			map[string]int64{"a": 100, "b": 100}, 3, 250, corev1.ResourceMemory, 2, 100}, // (100+100+250)/3 = 150 → 0.6 of 3 = 1.8
		{"a pod without a sample uses nothing on a scale-up", []testPod{{name: "a"}, {name: "b"}},
			map[string]int64{"a": 1000}, 2, 250, corev1.ResourceMemory, 4, 1000}, // 500/250 = 2 of 2
		{"a pod not ready on a scale-up, for a metric other than a resource's", []testPod{{name: "a"}, {name: "b", phase: corev1.PodPending}},
			map[string]int64{"a": 1000}, 2, 250, "", 4, 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := Pods{Pods: pods(c.pods...), Metrics: samplesOf(c.samples), Now: t0, Readiness: DefaultReadiness}
			got, avg, err := AverageValue(in, c.current, c.target, c.resource, defaultTol)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || avg != c.wantAvg {
				t.Errorf("= %d, average %d; want %d, %d", got, avg, c.want, c.wantAvg)
			}
		})
	}
}

func TestToleranceString(t *testing.T) {
	if s := fmt.Sprint(Tolerances{Down: 0.1, Up: 0.05}); s != "[down:10.0%, up:5.0%]" {
		t.Errorf("%s", s)
	}
}
