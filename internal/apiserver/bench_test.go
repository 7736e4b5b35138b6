package apiserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

const benchPodJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","labels":{"app":"web","tier":"%d"}},"spec":{"containers":[{"name":"c","image":"busybox:1.36","command":["sleep","3600"],"resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}`

// BenchmarkCreatePod measures a pod create through the whole handler chain
// (decode, defaults, validation, managed fields, storage) on memory storage.
func BenchmarkCreatePod(b *testing.B) {
	h := newTestServer(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rec := do(h, "POST", "/api/v1/namespaces/default/pods", "application/json", "", fmt.Sprintf(benchPodJSON, fmt.Sprintf("p%d", i), i%10))
		if rec.Code != http.StatusCreated {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkListPods measures a consistent LIST of 1000 pods, as JSON and as
// the Table kubectl asks for.
func BenchmarkListPods(b *testing.B) {
	h := newTestServer(b)
	for i := 0; i < 1000; i++ {
		do(h, "POST", "/api/v1/namespaces/default/pods", "application/json", "", fmt.Sprintf(benchPodJSON, fmt.Sprintf("p%d", i), i%10))
	}
	for _, accept := range []string{"application/json", "application/json;as=Table;v=v1;g=meta.k8s.io"} {
		b.Run(strings.SplitN(accept, ";", 2)[len(strings.SplitN(accept, ";", 2))-1], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods", nil)
				req.Header.Set("Accept", accept)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

// BenchmarkSelectorMatch measures label and field selector matching of one object.
func BenchmarkSelectorMatch(b *testing.B) {
	ls := labels.SelectorFromSet(labels.Set{"app": "web", "tier": "3"})
	fs := fields.ParseSelectorOrDie("spec.nodeName=n1,metadata.namespace=default")
	objLabels := labels.Set{"app": "web", "tier": "3", "pod-template-hash": "abc"}
	objFields := fields.Set{"metadata.name": "p", "metadata.namespace": "default", "spec.nodeName": "n1", "status.phase": "Running"}
	b.ReportAllocs()
	for b.Loop() {
		if !ls.Matches(objLabels) || !fs.Matches(objFields) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkRequestMetrics measures what the request metrics add to one
// request: labelling it, the in-flight gauge, and at its end the counter,
// latency, SLI latency and size (to compare with BenchmarkCreatePod's
// whole request).
func BenchmarkRequestMetrics(b *testing.B) {
	ms := newMetrics(nil)
	r := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods/p", nil)
	info := parseRequestInfo(r)
	b.ReportAllocs()
	for b.Loop() {
		m, _ := measure(r, info)
		end := ms.begin(m, false)
		end(200, 1234, 0)
	}
}

// BenchmarkUpdatePodStatus measures a pod status patch as a node agent
// sends it (the condition and phase change at each patch) through the
// whole handler chain on memory storage: read, patch, managed fields,
// validation, encode, write.
func BenchmarkUpdatePodStatus(b *testing.B) {
	h := newTestServer(b)
	if rec := do(h, "POST", "/api/v1/namespaces/default/pods", "application/json", "", fmt.Sprintf(benchPodJSON, "p", 0)); rec.Code != http.StatusCreated {
		b.Fatalf("%d %s", rec.Code, rec.Body)
	}
	phases := []string{"Pending", "Running"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		patch := fmt.Sprintf(`{"status":{"phase":%q,"conditions":[{"type":"Ready","status":"%v","lastTransitionTime":"2026-01-01T00:00:%02dZ"}]}}`, phases[i%2], i%2 == 1, i%60)
		rec := do(h, "PATCH", "/api/v1/namespaces/default/pods/p/status", "application/strategic-merge-patch+json", "", patch)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
