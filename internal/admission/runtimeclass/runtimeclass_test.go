package runtimeclass

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/admissiontest"
)

var overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")}

var objects = admissiontest.Objects{runtimeClassGVR: {
	&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Handler: "runc"},
	&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata", Overhead: &nodev1.Overhead{PodFixed: overhead},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "kata"},
			Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}},
}}

func admit(pod *corev1.Pod) (*corev1.Pod, error) {
	p := New(objects)
	a := &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "ns", Name: pod.Name, Object: pod}
	if !p.Handles(a) {
		return nil, nil
	}
	if err := p.Mutate(context.Background(), a); err != nil {
		return nil, err
	}
	if err := p.Validate(context.Background(), a); err != nil {
		return nil, err
	}
	return a.Object.(*corev1.Pod), nil
}

func podOf(class string, mod func(*corev1.PodSpec)) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if class != "" {
		pod.Spec.RuntimeClassName = ptr.To(class)
	}
	if mod != nil {
		mod(&pod.Spec)
	}
	return pod
}

func TestAdmit(t *testing.T) {
	for _, tt := range []struct {
		name    string
		pod     *corev1.Pod
		want    func(*corev1.PodSpec)
		wantErr string
	}{
		{name: "no class", pod: podOf("", nil)},
		{name: "class without overhead or scheduling", pod: podOf("plain", nil)},
		{name: "missing class", pod: podOf("nope", nil), wantErr: `pods "p" is forbidden: pod rejected: RuntimeClass "nope" not found`},
		{name: "overhead and scheduling", pod: podOf("kata", func(s *corev1.PodSpec) {
			s.NodeSelector = map[string]string{"zone": "a"}
			s.Tolerations = []corev1.Toleration{{Key: "x", Operator: corev1.TolerationOpExists}}
		}), want: func(s *corev1.PodSpec) {
			s.Overhead = overhead
			s.NodeSelector = map[string]string{"zone": "a", "sandbox": "kata"}
			s.Tolerations = []corev1.Toleration{{Key: "x", Operator: corev1.TolerationOpExists},
				{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}},
		{name: "same overhead", pod: podOf("kata", func(s *corev1.PodSpec) { s.Overhead = overhead.DeepCopy() }), want: func(s *corev1.PodSpec) {
			s.Overhead = overhead
			s.NodeSelector = map[string]string{"sandbox": "kata"}
			s.Tolerations = []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}},
		{name: "a wider toleration of the pod's covers the class's", pod: podOf("kata", func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}), want: func(s *corev1.PodSpec) {
			s.Overhead = overhead
			s.NodeSelector = map[string]string{"sandbox": "kata"}
			s.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}},
		{name: "other overhead", pod: podOf("kata", func(s *corev1.PodSpec) { s.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")} }),
			wantErr: `pods "p" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`},
		{name: "overhead without a class overhead", pod: podOf("plain", func(s *corev1.PodSpec) { s.Overhead = overhead.DeepCopy() }),
			wantErr: `pods "p" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		{name: "conflicting node selector", pod: podOf("kata", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"sandbox": "gvisor"} }),
			wantErr: `pods "p" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = kata; pod.spec.nodeSelector[sandbox] = gvisor`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.pod.DeepCopy()
			if tt.want != nil {
				tt.want(&want.Spec)
			}
			got, err := admit(tt.pod)
			switch {
			case tt.wantErr != "":
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("got %v, want %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case !reflect.DeepEqual(runtime.Object(got), runtime.Object(want)):
				t.Errorf("pod spec\n got %+v\nwant %+v", got.Spec, want.Spec)
			}
		})
	}
}
