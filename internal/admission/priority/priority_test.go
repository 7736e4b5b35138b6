package priority

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/admissiontest"
	"plainkube.dev/plainkube/internal/registry/scheduling"
)

func class(name string, value int32, globalDefault bool, policy corev1.PreemptionPolicy) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: globalDefault, PreemptionPolicy: &policy}
}

func classes(pcs ...*schedulingv1.PriorityClass) admissiontest.Objects {
	var objs []runtime.Object
	for _, sys := range scheduling.SystemPriorityClasses() {
		sys.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
		objs = append(objs, sys)
	}
	for _, pc := range pcs {
		objs = append(objs, pc)
	}
	return admissiontest.Objects{priorityClassGVR: objs}
}

func TestPodPriority(t *testing.T) {
	never := corev1.PreemptNever
	lower := corev1.PreemptLowerPriority
	for _, tt := range []struct {
		name      string
		objects   admissiontest.Objects
		spec      corev1.PodSpec
		wantClass string
		want      int32
		policy    *corev1.PreemptionPolicy
		err       string // the refusal's message
	}{
		{name: "no class, no default", objects: classes(), want: 0},
		{name: "the global default", objects: classes(class("low", 5, true, never), class("high", 100, false, lower)), wantClass: "low", want: 5, policy: &never},
		{name: "named class", objects: classes(class("high", 100, false, never)), spec: corev1.PodSpec{PriorityClassName: "high"}, wantClass: "high", want: 100, policy: &never},
		{name: "built-in class", objects: classes(), spec: corev1.PodSpec{PriorityClassName: "system-node-critical"}, wantClass: "system-node-critical", want: 2000001000, policy: &lower},
		{name: "several defaults: the lowest", objects: classes(class("a", 50, true, lower), class("b", 7, true, lower)), wantClass: "b", want: 7, policy: &lower},
		{name: "unknown class", objects: classes(), spec: corev1.PodSpec{PriorityClassName: "nope"},
			err: `pods "p" is forbidden: no PriorityClass with name nope was found`},
		{name: "same priority as the class", objects: classes(class("high", 100, false, lower)), spec: corev1.PodSpec{PriorityClassName: "high", Priority: ptr.To(int32(100))}, wantClass: "high", want: 100, policy: &lower},
		{name: "other priority than the class", objects: classes(class("high", 100, false, lower)), spec: corev1.PodSpec{PriorityClassName: "high", Priority: ptr.To(int32(3))},
			err: `pods "p" is forbidden: the integer value of priority (3) must not be provided in pod spec; priority admission controller computed 100 from the given PriorityClass name`},
		{name: "priority without class or default", objects: classes(), spec: corev1.PodSpec{Priority: ptr.To(int32(3))},
			err: `pods "p" is forbidden: the integer value of priority (3) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name`},
		{name: "other preemption policy than the class", objects: classes(class("high", 100, false, lower)), spec: corev1.PodSpec{PriorityClassName: "high", PreemptionPolicy: &never},
			err: `pods "p" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: tt.spec}
			a := &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "ns", Name: "p", Object: pod}
			err := admission.Chain{New(tt.objects)}.Mutate(context.Background(), a)
			if tt.err != "" {
				if !apierrors.IsForbidden(err) || err.Error() != tt.err {
					t.Fatalf("got %v, want 403 %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pod.Spec.PriorityClassName != tt.wantClass || pod.Spec.Priority == nil || *pod.Spec.Priority != tt.want {
				t.Errorf("class %q priority %v, want %q %d", pod.Spec.PriorityClassName, pod.Spec.Priority, tt.wantClass, tt.want)
			}
			if (pod.Spec.PreemptionPolicy == nil) != (tt.policy == nil) || (tt.policy != nil && *pod.Spec.PreemptionPolicy != *tt.policy) {
				t.Errorf("preemption policy %v, want %v", pod.Spec.PreemptionPolicy, tt.policy)
			}
		})
	}
}

func TestUpdateKeepsPriority(t *testing.T) {
	old := &corev1.Pod{Spec: corev1.PodSpec{Priority: ptr.To(int32(9)), PreemptionPolicy: ptr.To(corev1.PreemptNever)}}
	pod := &corev1.Pod{}
	a := &admission.Attributes{Operation: admission.Update, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Object: pod, OldObject: old}
	if err := (admission.Chain{New(classes())}).Mutate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if *pod.Spec.Priority != 9 || *pod.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("update lost the priority: %+v", pod.Spec)
	}
}

func TestPriorityClasses(t *testing.T) {
	pcs := schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")
	withDefault := classes(class("def", 1, true, corev1.PreemptLowerPriority))
	for _, tt := range []struct {
		name    string
		objects admissiontest.Objects
		a       *admission.Attributes
		err     string
	}{
		{"a second default", withDefault, &admission.Attributes{Operation: admission.Create, Resource: pcs, Name: "other", Object: class("other", 2, true, corev1.PreemptLowerPriority)},
			`priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass def is already marked as default. Only one default can exist`},
		{"another made default", withDefault, &admission.Attributes{Operation: admission.Update, Resource: pcs, Name: "other", Object: class("other", 2, true, corev1.PreemptLowerPriority)},
			`priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass def is already marked as default. Only one default can exist`},
		{"the default updated", withDefault, &admission.Attributes{Operation: admission.Update, Resource: pcs, Name: "def", Object: class("def", 1, true, corev1.PreemptLowerPriority)}, ""},
		{"the first default", classes(), &admission.Attributes{Operation: admission.Create, Resource: pcs, Name: "def", Object: class("def", 1, true, corev1.PreemptLowerPriority)}, ""},
		{"a non-default", withDefault, &admission.Attributes{Operation: admission.Create, Resource: pcs, Name: "x", Object: class("x", 1, false, corev1.PreemptLowerPriority)}, ""},
		{"delete a built-in class", classes(), &admission.Attributes{Operation: admission.Delete, Resource: pcs, Name: "system-node-critical"},
			`priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted`},
		{"delete another class", withDefault, &admission.Attributes{Operation: admission.Delete, Resource: pcs, Name: "def"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := admission.Chain{New(tt.objects)}.Validate(context.Background(), tt.a)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || err.Error() != tt.err || !apierrors.IsForbidden(err)) {
				t.Errorf("got %v, want %q", err, tt.err)
			}
		})
	}
}
