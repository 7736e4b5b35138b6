package volumes

import (
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"plainkube.dev/plainkube/internal/kubelet/atomicwriter"
	"plainkube.dev/plainkube/internal/kubelet/env"
)

func TestKeyFiles(t *testing.T) {
	data := map[string][]byte{"b": []byte("B"), "a": []byte("A")}
	m := func(v int32) *int32 { return &v }
	f := func(d string, mode fs.FileMode) atomicwriter.File {
		return atomicwriter.File{Data: []byte(d), Mode: mode}
	}
	tests := []struct {
		name     string
		items    []corev1.KeyToPath
		mode     *int32
		optional bool
		want     payload
		wantErr  string
	}{
		{name: "every key, default mode",
			want: payload{"a": f("A", 0o644), "b": f("B", 0o644)}},
		{name: "defaultMode", mode: m(0o400),
			want: payload{"a": f("A", 0o400), "b": f("B", 0o400)}},
		{name: "items with paths and modes", mode: m(0o440),
			items: []corev1.KeyToPath{{Key: "b", Path: "dir/b.txt", Mode: m(0o600)}, {Key: "a", Path: "./a"}},
			want:  payload{"dir/b.txt": f("B", 0o600), "a": f("A", 0o440)}},
		{name: "missing key", items: []corev1.KeyToPath{{Key: "c", Path: "c"}},
			wantErr: `configmap references non-existent config key: c`},
		{name: "missing key, optional", optional: true, items: []corev1.KeyToPath{{Key: "c", Path: "c"}, {Key: "a", Path: "a"}},
			want: payload{"a": f("A", 0o644)}},
		{name: "escaping path", items: []corev1.KeyToPath{{Key: "a", Path: "../a"}},
			wantErr: `item "a": path "../a" must not contain '..'`},
		{name: "absolute path", items: []corev1.KeyToPath{{Key: "a", Path: "/etc/a"}},
			wantErr: `item "a": path "/etc/a" must be relative`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := payload{}
			err := keyFiles(got, data, tt.items, tt.mode, tt.optional, missingConfigMapKey)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestContainerMounts(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}},
		{Name: "nfs", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{}}},
		{Name: "claim-ro", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c", ReadOnly: true}}},
	}}}
	paths := map[string]string{"cache": "/d/cache", "cfg": "/d/cfg", "sec": "/d/sec", "host": "/srv", "claim-ro": "/pv"}
	tests := []struct {
		name    string
		mounts  []corev1.VolumeMount
		want    []*runtimeapi.Mount
		wantErr string
	}{
		{name: "read-write, read-only, API volumes always read-only",
			mounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}, {Name: "host", MountPath: "/h", ReadOnly: true},
				{Name: "cfg", MountPath: "/etc/cfg"}, {Name: "sec", MountPath: "/s"}},
			want: []*runtimeapi.Mount{{ContainerPath: "/cache", HostPath: "/d/cache"}, {ContainerPath: "/h", HostPath: "/srv", Readonly: true},
				{ContainerPath: "/etc/cfg", HostPath: "/d/cfg", Readonly: true}, {ContainerPath: "/s", HostPath: "/d/sec", Readonly: true}}},
		{name: "a claim read-only in the pod's volume", mounts: []corev1.VolumeMount{{Name: "claim-ro", MountPath: "/data", SubPath: "x"}},
			want: []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/pv/x", Readonly: true}}},
		{name: "subPath", mounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/x", SubPath: "a/b"}, {Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"}},
			want: []*runtimeapi.Mount{{ContainerPath: "/x", HostPath: "/d/cache/a/b"}, {ContainerPath: "/etc/app.conf", HostPath: "/d/cfg/app.conf", Readonly: true}}},
		{name: "subPath escaping", mounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/x", SubPath: "a/../../etc"}},
			wantErr: `volume mount "cache" subPath: path "a/../../etc" must not contain '..'`},
		{name: "subPathExpr", mounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/x", SubPathExpr: "logs/$(POD)"}, {Name: "cache", MountPath: "/y", SubPathExpr: "$(NOPE)"}},
			want: []*runtimeapi.Mount{{ContainerPath: "/x", HostPath: "/d/cache/logs/web-0"}, {ContainerPath: "/y", HostPath: "/d/cache/$(NOPE)"}}},
		{name: "subPathExpr escaping", mounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/x", SubPathExpr: "$(UP)/etc"}},
			wantErr: `volume mount "cache" subPath: path "../etc" must not contain '..'`},
		{name: "no such volume", mounts: []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}},
			wantErr: `volume mount "nope": no such volume`},
		{name: "unsupported volume type", mounts: []corev1.VolumeMount{{Name: "nfs", MountPath: "/x"}},
			wantErr: `volume mount "nfs": no such volume`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ContainerMounts(pod, &corev1.Container{VolumeMounts: tt.mounts}, paths, []env.Var{{Name: "POD", Value: "web-0"}, {Name: "UP", Value: ".."}})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b *runtimeapi.Mount) bool {
				return a.ContainerPath == b.ContainerPath && a.HostPath == b.HostPath && a.Readonly == b.Readonly
			})); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
