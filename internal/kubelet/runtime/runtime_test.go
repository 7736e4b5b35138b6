package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerSecurity(t *testing.T) {
	uid, gid, fs, other := int64(1000), int64(2000), int64(3000), int64(1001)
	no, yes := false, true
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &gid, FSGroup: &fs, SupplementalGroups: []int64{5}},
		Containers: []corev1.Container{{Name: "a", SecurityContext: &corev1.SecurityContext{
			RunAsUser: &other, ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}},
		}}, {Name: "b", SecurityContext: &corev1.SecurityContext{Privileged: &yes}}},
	}}
	sc := containerSecurity(pod, &pod.Spec.Containers[0])
	if sc.RunAsUser.GetValue() != 1001 || sc.RunAsGroup.GetValue() != 2000 || !sc.ReadonlyRootfs || !sc.NoNewPrivs || sc.Privileged ||
		!slices.Equal(sc.SupplementalGroups, []int64{5, 3000}) ||
		!slices.Equal(sc.Capabilities.AddCapabilities, []string{"NET_ADMIN"}) || !slices.Equal(sc.Capabilities.DropCapabilities, []string{"ALL"}) {
		t.Errorf("container a: %+v", sc)
	}
	if sc := containerSecurity(pod, &pod.Spec.Containers[1]); !sc.Privileged || sc.NoNewPrivs || sc.RunAsUser.GetValue() != 1000 {
		t.Errorf("container b: %+v", sc)
	}
	if sb := sandboxSecurity(pod); !sb.Privileged || sb.RunAsUser.GetValue() != 1000 {
		t.Errorf("sandbox: %+v", sb)
	}
}

func TestVerifyNonRoot(t *testing.T) {
	zero, uid := int64(0), int64(1000)
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes}}}
	c := &corev1.Container{Name: "c"}
	for _, tc := range []struct {
		name    string
		runAs   *int64
		img     ImageUser
		wantErr string
	}{
		{"image without a user runs as root", nil, ImageUser{}, "container has runAsNonRoot and image will run as root"},
		{"image user 0", nil, ImageUser{UID: &zero}, "image will run as root"},
		{"image user 1000", nil, ImageUser{UID: &uid}, ""},
		{"image user by name", nil, ImageUser{Name: "app"}, "image has non-numeric user (app)"},
		{"runAsUser 1000", &uid, ImageUser{}, ""},
		{"runAsUser 0", &zero, ImageUser{UID: &uid}, "container's runAsUser breaks non-root policy"},
	} {
		c.SecurityContext = &corev1.SecurityContext{RunAsUser: tc.runAs}
		err := VerifyNonRoot(pod, c, tc.img)
		if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestContainerResources(t *testing.T) {
	res := func(req, lim corev1.ResourceList) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: req, Limits: lim}
	}
	cpuMem := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	node := int64(8 << 30)
	for _, tc := range []struct {
		name string
		r    corev1.ResourceRequirements
		want *runtimeapi.LinuxContainerResources
	}{
		{"best effort", res(nil, nil), &runtimeapi.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 1000}},
		{"guaranteed", res(cpuMem("500m", "64Mi"), cpuMem("500m", "64Mi")),
			&runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 64 << 20, OomScoreAdj: -997}},
		{"burstable", res(cpuMem("250m", "1Gi"), corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}),
			&runtimeapi.LinuxContainerResources{CpuShares: 256, MemoryLimitInBytes: 2 << 30, OomScoreAdj: 875}},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: tc.r}}}}
		got := containerResources(pod, &pod.Spec.Containers[0], node)
		if got.CpuShares != tc.want.CpuShares || got.CpuPeriod != tc.want.CpuPeriod || got.CpuQuota != tc.want.CpuQuota ||
			got.MemoryLimitInBytes != tc.want.MemoryLimitInBytes || got.OomScoreAdj != tc.want.OomScoreAdj {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestLogTail(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		b.WriteString("2026-01-01T00:00:00.000000000Z stdout F line " + string(rune('a'+i%26)) + "\n")
	}
	b.WriteString("2026-01-01T00:00:00.000000000Z stderr P part-\n2026-01-01T00:00:00.000000000Z stderr F end\n")
	p := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := logTail(p, 80, 2048)
	if n := strings.Count(got, "\n"); n != 80 || !strings.HasSuffix(got, "part-end\n") {
		t.Errorf("%d lines:\n%s", n, got)
	}
	if got := logTail(p, 80, 10); got != "\npart-end\n" {
		t.Errorf("limited: %q", got)
	}
	// Output that ends without a newline (echo -n DONE; false) is a last
	// partial record: it counts, as it is.
	unterminated := filepath.Join(t.TempDir(), "1.log")
	if err := os.WriteFile(unterminated, []byte("2026-01-01T00:00:00.000000000Z stdout P DONE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := logTail(unterminated, 80, 2048); got != "DONE" {
		t.Errorf("unterminated output: %q, want %q", got, "DONE")
	}
}
