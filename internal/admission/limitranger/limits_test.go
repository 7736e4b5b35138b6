package limitranger

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func limitRange(items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func containerPod(requests, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}}}}
}

func TestDefaults(t *testing.T) {
	lr := limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Default: list("cpu", "500m", "memory", "256Mi"), DefaultRequest: list("cpu", "100m", "memory", "128Mi")})
	p := containerPod(list("memory", "64Mi"), nil)
	p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	applyDefaults(lr, p)
	c := p.Spec.Containers[0].Resources
	if !equal(c.Requests, list("cpu", "100m", "memory", "64Mi")) || !equal(c.Limits, list("cpu", "500m", "memory", "256Mi")) {
		t.Errorf("container: requests %v limits %v", c.Requests, c.Limits)
	}
	want := "LimitRanger plugin set: cpu request for container app; cpu, memory limit for container app; " +
		"cpu, memory request for init container init; cpu, memory limit for init container init"
	if got := p.Annotations[Annotation]; got != want {
		t.Errorf("annotation %q\nwant       %q", got, want)
	}
	untouched := containerPod(list("cpu", "1", "memory", "1Gi"), list("cpu", "1", "memory", "1Gi"))
	applyDefaults(lr, untouched)
	if _, ok := untouched.Annotations[Annotation]; ok {
		t.Error("a pod with everything set got an annotation")
	}
}

func TestValidate(t *testing.T) {
	container := limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Max: list("cpu", "1"), Min: list("memory", "10Mi"), MaxLimitRequestRatio: list("cpu", "2")})
	podItem := limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: list("memory", "1Gi")})
	claim := limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Min: list("storage", "1Gi"), Max: list("storage", "5Gi")})
	pvc := func(size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: list("storage", size)}}}
	}
	twoContainers := containerPod(list("memory", "600Mi"), list("memory", "600Mi"))
	twoContainers.Spec.Containers = append(twoContainers.Spec.Containers, twoContainers.Spec.Containers[0])
	twoContainers.Spec.Containers[1].Name = "second"
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"within", validatePod(container, containerPod(list("cpu", "500m", "memory", "20Mi"), list("cpu", "1", "memory", "20Mi"))), ""},
		{"over max", validatePod(container, containerPod(list("cpu", "2", "memory", "20Mi"), list("cpu", "2", "memory", "20Mi"))),
			"maximum cpu usage per Container is 1, but limit is 2"},
		{"two violations", validatePod(container, containerPod(list("cpu", "2", "memory", "5Mi"), list("cpu", "2", "memory", "5Mi"))),
			"[minimum memory usage per Container is 10Mi, but request is 5Mi, maximum cpu usage per Container is 1, but limit is 2]"},
		{"no limit", validatePod(limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: list("cpu", "1")}), containerPod(nil, nil)),
			"maximum cpu usage per Container is 1.  No limit is specified"},
		{"under min", validatePod(limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: list("memory", "10Mi")}), containerPod(list("memory", "5Mi"), nil)),
			"minimum memory usage per Container is 10Mi, but request is 5Mi"},
		{"ratio", validatePod(limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: list("cpu", "2")}), containerPod(list("cpu", "100m"), list("cpu", "1"))),
			"cpu max limit to request ratio per Container is 2, but provided ratio is 10.000000"},
		{"pod total over max", validatePod(podItem, twoContainers), "maximum memory usage per Pod is 1Gi, but limit is 1200Mi"},
		{"claim within", validateClaim(claim, pvc("2Gi")), ""},
		{"claim too big", validateClaim(claim, pvc("10Gi")), "maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi"},
		{"claim too small", validateClaim(claim, pvc("100Mi")), "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 100Mi"},
	} {
		got := ""
		if tt.err != nil {
			got = tt.err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func equal(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
