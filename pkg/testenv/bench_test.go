package testenv_test

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/pkg/testenv"
)

// BenchmarkStart measures what a test pays before its first request: start
// a control plane, answer one request, and stop it (ns/op), and the median
// time from the start to that first answer. envtest's equivalent
// starts etcd and kube-apiserver processes (upstream binaries, which this
// benchmark does not need).
//
//	go test -run '^$' -bench Start ./pkg/testenv/
func BenchmarkStart(b *testing.B) {
	cases := []struct {
		name string
		opts []testenv.Option
	}{
		{"InMemory", nil},
		{"InMemory+CRDs", []testenv.Option{testenv.WithCRDs("testdata/crds")}},
		{"InMemory+Controllers+Scheduler+3SimNodes", []testenv.Option{testenv.WithControllers(), testenv.WithScheduler(), testenv.WithSimNodes(3)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var ready []time.Duration
			for b.Loop() {
				start := time.Now()
				e := &testenv.Environment{Options: c.opts}
				cfg, err := e.Start()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
				ready = append(ready, time.Since(start))
				if err := e.Stop(); err != nil {
					b.Fatal(err)
				}
			}
			// The median time to a first answer, the stop left out.
			slices.Sort(ready)
			b.ReportMetric(float64(ready[len(ready)/2])/float64(time.Millisecond), "ms-to-first-answer(median)")
		})
	}
}
