package server

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/api/stats"
)

func get(h *Handler, path string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code, rec.Body.String()
}

func TestPodsAndMetrics(t *testing.T) {
	if code, _ := get(&Handler{}, "/pods"); code != 501 {
		t.Errorf("/pods without a source: %d", code)
	}
	if code, _ := get(&Handler{}, "/metrics"); code != 501 {
		t.Errorf("/metrics without metrics: %d", code)
	}
	pods := func() []corev1.Pod {
		return []corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
				{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}},
			}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
		}
	}
	m := NewMetrics("n1", pods)
	m.PodSeen("u1")
	m.PodRunning("u1")
	m.PodRunning("u1") // a second time is not observed
	m.ObserveSync(20*time.Millisecond, nil)
	h := &Handler{Pods: pods, Metrics: m}
	code, body := get(h, "/pods")
	if code != 200 || !strings.Contains(body, `"kind":"PodList","apiVersion":"v1"`) || !strings.Contains(body, `"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"`) {
		t.Errorf("/pods: %d %s", code, body)
	}
	code, body = get(h, "/metrics")
	for _, want := range []string{
		`kubelet_node_name{node="n1"} 1`,
		"kubelet_running_pods 1",
		`kubelet_running_containers{container_state="running"} 1`,
		`kubelet_running_containers{container_state="exited"} 1`,
		"kubelet_pod_start_duration_seconds_count 1",
		`kubelet_pod_worker_duration_seconds_count{operation_type="sync"} 1`,
		"kubelet_pod_sync_errors_total 0",
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q (%d)", want, code)
		}
	}
	if code, body := get(h, "/metrics/resource"); code != 200 || !strings.Contains(body, "scrape_error 1") {
		t.Errorf("/metrics/resource without a summary: %d %s", code, body)
	}
	if code, _ := get(h, "/metrics/cadvisor"); code != 404 {
		t.Errorf("/metrics/cadvisor: %d", code)
	}
	u := func(v uint64) *uint64 { return &v }
	at := metav1.NewTime(time.Unix(1700000000, 0))
	h.Summary = func() (*stats.Summary, error) {
		return &stats.Summary{
			Node: stats.NodeStats{NodeName: "n1", CPU: &stats.CPUStats{Time: at, UsageCoreNanoSeconds: u(2_500_000_000)}, Memory: &stats.MemoryStats{Time: at, WorkingSetBytes: u(1024)}},
			Pods: []stats.PodStats{{PodRef: stats.PodReference{Name: "a", Namespace: "ns"}, CPU: &stats.CPUStats{Time: at, UsageCoreNanoSeconds: u(1_000_000_000)},
				Containers: []stats.ContainerStats{{Name: "c", StartTime: at, Memory: &stats.MemoryStats{Time: at, WorkingSetBytes: u(512)}}}}},
		}, nil
	}
	code, body = get(h, "/metrics/resource")
	for _, want := range []string{
		"scrape_error 0",
		"node_cpu_usage_seconds_total 2.5 1700000000000",
		"node_memory_working_set_bytes 1024 1700000000000",
		`pod_cpu_usage_seconds_total{namespace="ns",pod="a"} 1 1700000000000`,
		`container_memory_working_set_bytes{container="c",namespace="ns",pod="a"} 512 1700000000000`,
		`container_start_time_seconds{container="c",namespace="ns",pod="a"} 1.7e+09`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics/resource lacks %q (%d):\n%s", want, code, body)
		}
	}
}
