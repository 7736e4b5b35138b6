package podautoscaler

import "testing"

// BenchmarkPlanSync is the pure part of one sync: an HPA with a CPU
// utilization metric and the API's default behavior over 10 pods.
func BenchmarkPlanSync(b *testing.B) {
	hpa := testHPA(1, 20, cpuUtilization(50))
	hpa.Spec.Behavior = upstreamDefaults()
	usage := make([]int64, 10)
	for i := range usage {
		usage[i] = 80
	}
	st := stateOf(hpa, 10, usage...)
	b.ReportAllocs()
	for b.Loop() {
		plan := PlanSync(st)
		plan.Finish(st, nil)
	}
}
