package bench

import (
	"bytes"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"plainkube.dev/plainkube/internal/apiserver"
)

// servedSerializer returns the serializer the API server's scheme offers for
// a media type (the ones it answers requests and stores objects with).
func servedSerializer(tb testing.TB, mediaType string) runtime.Serializer {
	tb.Helper()
	f := serializer.NewCodecFactory(apiserver.Scheme())
	info, ok := runtime.SerializerInfoForMediaType(f.SupportedMediaTypes(), mediaType)
	if !ok {
		tb.Fatalf("no serializer for %s", mediaType)
	}
	return info.Serializer
}

func codecPod(i int) *corev1.Pod {
	p := benchPod(fmt.Sprintf("p-%06d", i), map[string]string{"app": "web", "group": fmt.Sprint(i % 10)})
	p.APIVersion, p.Kind = "v1", "Pod"
	p.Namespace = "default"
	p.Spec.NodeName = fmt.Sprintf("node-%04d", i%1000)
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

// TestCodecRoundTrip checks what BenchmarkCodec measures: a pod survives
// encoding and decoding with each served serializer.
func TestCodecRoundTrip(t *testing.T) {
	for _, mt := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		s := servedSerializer(t, mt)
		var buf bytes.Buffer
		if err := s.Encode(codecPod(7), &buf); err != nil {
			t.Fatalf("%s: encode: %v", mt, err)
		}
		gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
		obj, _, err := s.Decode(buf.Bytes(), &gvk, &corev1.Pod{})
		if err != nil {
			t.Fatalf("%s: decode: %v", mt, err)
		}
		if p := obj.(*corev1.Pod); p.Name != "p-000007" || p.Spec.NodeName != "node-0007" || p.Spec.Containers[0].Resources.Requests.Cpu().String() != "10m" {
			t.Errorf("%s: round trip changed the pod: %+v", mt, p)
		}
	}
}

// BenchmarkCodec measures encoding and decoding of a pod and of a list of
// 1000 pods with the JSON and protobuf serializers of the API server's
// scheme: the work behind every request body, response and stored object.
//
//	go test -run '^$' -bench Codec ./internal/bench/
func BenchmarkCodec(b *testing.B) {
	list := &corev1.PodList{}
	list.APIVersion, list.Kind = "v1", "PodList"
	for i := 0; i < 1000; i++ {
		list.Items = append(list.Items, *codecPod(i))
	}
	for _, mt := range []struct{ name, mediaType string }{{"json", "application/json"}, {"protobuf", "application/vnd.kubernetes.protobuf"}} {
		s := servedSerializer(b, mt.mediaType)
		for _, c := range []struct {
			name string
			obj  runtime.Object
			into func() runtime.Object
		}{
			{"pod", codecPod(1), func() runtime.Object { return &corev1.Pod{} }},
			{"podlist-1000", list, func() runtime.Object { return &corev1.PodList{} }},
		} {
			var buf bytes.Buffer
			if err := s.Encode(c.obj, &buf); err != nil {
				b.Fatal(err)
			}
			data := buf.Bytes()
			b.Run(c.name+"/"+mt.name+"/encode", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				var out bytes.Buffer
				for b.Loop() {
					out.Reset()
					if err := s.Encode(c.obj, &out); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(c.name+"/"+mt.name+"/decode", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, _, err := s.Decode(data, nil, c.into()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
