package volumes

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"plainkube.dev/plainkube/internal/kubelet/atomicwriter"
)

// files renders a payload as path=data mode lines, for comparison.
func files(p payload) map[string]string {
	out := map[string]string{}
	for k, f := range p {
		out[k] = string(f.Data) + " " + f.Mode.String()
	}
	return out
}

func volumeTestPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1",
			Labels: map[string]string{"app": "web", "tier": "fe"}, Annotations: map[string]string{"note": "x y"}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa", Containers: []corev1.Container{{
			Name: "c",
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			},
		}}},
	}
}

var testAllocatable = corev1.ResourceList{
	corev1.ResourceCPU:              resource.MustParse("2"),
	corev1.ResourceMemory:           resource.MustParse("8Gi"),
	corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
}

func TestDownwardAPIFiles(t *testing.T) {
	pod := volumeTestPod()
	m := func(v int32) *int32 { return &v }
	field := func(p string) *corev1.ObjectFieldSelector { return &corev1.ObjectFieldSelector{FieldPath: p} }
	res := func(r, div string) *corev1.ResourceFieldSelector {
		s := &corev1.ResourceFieldSelector{ContainerName: "c", Resource: r}
		if div != "" {
			s.Divisor = resource.MustParse(div)
		}
		return s
	}
	items := []corev1.DownwardAPIVolumeFile{
		{Path: "name", FieldRef: field("metadata.name")},
		{Path: "ns", FieldRef: field("metadata.namespace")},
		{Path: "uid", FieldRef: field("metadata.uid"), Mode: m(0o600)},
		{Path: "labels", FieldRef: field("metadata.labels")},
		{Path: "meta/annotations", FieldRef: field("metadata.annotations")},
		{Path: "app", FieldRef: field("metadata.labels['app']")},
		{Path: "mem_limit_mi", ResourceFieldRef: res("limits.memory", "1Mi")},
		{Path: "cpu_limit", ResourceFieldRef: res("limits.cpu", "")},         // node allocatable, 1 core divisor
		{Path: "cpu_request_m", ResourceFieldRef: res("requests.cpu", "1m")}, // 250
		{Path: "cpu_request", ResourceFieldRef: res("requests.cpu", "")},     // rounded up: 1
		{Path: "storage_limit_gi", ResourceFieldRef: res("limits.ephemeral-storage", "1Gi")},
	}
	p := payload{}
	if err := downwardAPIFiles(p, pod, items, m(0o440), testAllocatable); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"name": "p -r--r-----", "ns": "ns -r--r-----", "uid": "u1 -rw-------",
		"labels":           "app=\"web\"\ntier=\"fe\" -r--r-----",
		"meta/annotations": "note=\"x y\" -r--r-----",
		"app":              "web -r--r-----",
		"mem_limit_mi":     "64 -r--r-----",
		"cpu_limit":        "2 -r--r-----",
		"cpu_request_m":    "250 -r--r-----",
		"cpu_request":      "1 -r--r-----",
		"storage_limit_gi": "100 -r--r-----",
	}
	if d := cmp.Diff(want, files(p)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for _, bad := range []corev1.DownwardAPIVolumeFile{
		{Path: "x", FieldRef: field("spec.nodeName")},
		{Path: "x", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}},
		{Path: "x", ResourceFieldRef: res("limits.gpus", "")},
		{Path: "../x", FieldRef: field("metadata.name")},
	} {
		if err := downwardAPIFiles(payload{}, pod, []corev1.DownwardAPIVolumeFile{bad}, nil, testAllocatable); err == nil {
			t.Errorf("item %+v: no error", bad)
		}
	}
}

func notFound(kind, name string) error {
	return apierrors.NewNotFound(corev1.Resource(kind), name)
}

func TestVolumePayloads(t *testing.T) {
	pod := volumeTestPod()
	yes := true
	objs := volumeObjects{
		ConfigMap: func(name string) (*corev1.ConfigMap, error) {
			if name == "cm" {
				return &corev1.ConfigMap{Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"bin": {0, 1}}}, nil
			}
			return nil, notFound("configmaps", name)
		},
		Secret: func(name string) (*corev1.Secret, error) {
			if name == "s" {
				return &corev1.Secret{Data: map[string][]byte{"pw": []byte("hunter2")}}, nil
			}
			return nil, notFound("secrets", name)
		},
		Token: func(t *corev1.ServiceAccountTokenProjection) (string, error) {
			return "token-for-" + t.Audience, nil
		},
		Allocatable: testAllocatable,
	}
	vol := func(src corev1.VolumeSource) *corev1.Volume { return &corev1.Volume{Name: "v", VolumeSource: src} }
	mode := int32(0o400)
	tests := []struct {
		name    string
		v       *corev1.Volume
		want    map[string]string
		wantErr string
	}{
		{name: "configMap", v: vol(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}),
			want: map[string]string{"k": "v -rw-r--r--", "bin": "\x00\x01 -rw-r--r--"}},
		{name: "configMap missing", v: vol(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "y"}}}),
			wantErr: `configmap "y" not found`},
		{name: "configMap missing, optional", v: vol(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "y"}, Optional: &yes}}),
			want: map[string]string{}},
		{name: "secret", v: vol(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: &mode}}),
			want: map[string]string{"pw": "hunter2 -r--------"}},
		{name: "secret missing", v: vol(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "z"}}),
			wantErr: `secret "z" not found`},
		{name: "secret missing key", v: vol(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", Items: []corev1.KeyToPath{{Key: "nokey", Path: "x"}}}}),
			wantErr: `references non-existent secret key: nokey`},
		{name: "projected", v: vol(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "aud"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Items: []corev1.KeyToPath{{Key: "k", Path: "ca.crt"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &yes}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}),
			want: map[string]string{"token": "token-for-aud -r--------", "ca.crt": "v -r--------", "namespace": "ns -r--------"}},
		{name: "projected, two sources missing", v: vol(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}},
		}}}),
			wantErr: `[configmap "a" not found, secret "b" not found]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok, err := volumePayload(pod, tt.v, objs)
			if !ok {
				t.Fatal("not an API volume")
			}
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, files(p)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}

	// A token for a pod whose containers all run as one user is theirs,
	// mode 0600.
	uid := int64(1000)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid}
	p, _, err := volumePayload(pod, vol(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}), objs)
	if err != nil {
		t.Fatal(err)
	}
	if f := p["token"]; f.Mode != 0o600 || f.FsUser == nil || *f.FsUser != 1000 {
		t.Errorf("token file = mode %v user %v", f.Mode, f.FsUser)
	}
	other := int64(2000)
	pod.Spec.InitContainers = []corev1.Container{{Name: "i", SecurityContext: &corev1.SecurityContext{RunAsUser: &other}}}
	if o := podProjectionOwner(pod); o.FsUser != nil {
		t.Errorf("containers disagree, fsUser = %d", *o.FsUser)
	}
}

func TestMemoryVolumeSize(t *testing.T) {
	pod := volumeTestPod() // one container, memory limit 64Mi
	q := resource.MustParse
	limit := func(s string) *resource.Quantity { v := q(s); return &v }
	for _, tc := range []struct {
		sizeLimit *resource.Quantity
		pod       *corev1.Pod
		want      string
	}{
		{nil, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{}}}}, "8Gi"},
		{nil, pod, "64Mi"},
		{limit("16Mi"), pod, "16Mi"},
		{limit("1Gi"), pod, "64Mi"},
		{limit("1Gi"), &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{}}}}, "1Gi"},
	} {
		got := memoryVolumeSize(tc.pod, &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tc.sizeLimit}, testAllocatable[corev1.ResourceMemory])
		if got.Cmp(q(tc.want)) != 0 {
			t.Errorf("sizeLimit %v: size %s, want %s", tc.sizeLimit, got.String(), tc.want)
		}
	}
}

func TestDiskUsageAndOwnership(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	used, err := diskUsage(dir)
	if err != nil || used < 256<<10 {
		t.Errorf("usage = %d, %v", used, err)
	}
	if os.Geteuid() != 0 {
		return
	}
	gid := int64(4242)
	w := &atomicwriter.Writer{Dir: filepath.Join(dir, "vol"), SetPerms: func(ts string) error { return setOwnership(ts, &gid, true) }}
	if _, err := w.Write(payload{"a": {Data: []byte("A"), Mode: 0o400}}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "vol", "a"))
	if err != nil || fi.Mode().Perm() != 0o440 || fileGID(fi) != 4242 {
		t.Errorf("a: mode %v gid %d (%v), want 0440 and gid 4242", fi.Mode(), fileGID(fi), err)
	}
}

func TestTokenCache(t *testing.T) {
	pod := volumeTestPod()
	cs := fake.NewClientset()
	var calls []*authenticationv1.TokenRequest
	var fail error
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := now // the API server's
	cs.PrependReactor("create", "serviceaccounts", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ca := action.(k8stesting.CreateAction)
		if ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		if fail != nil {
			return true, nil, fail
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		calls = append(calls, tr.DeepCopy())
		tr.Status.Token = "tok" + strings.Repeat("!", len(calls))
		tr.Status.ExpirationTimestamp = metav1.NewTime(clock.Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
		return true, tr, nil
	})
	var c tokenCache
	exp := int64(1000)
	proj := &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: &exp}
	ctx := context.Background()
	get := func(at time.Time) (string, error) { clock = at; return c.token(ctx, cs, pod, proj, at) }

	tok, err := get(now)
	if err != nil || tok != "tok!" {
		t.Fatalf("first token = %q, %v", tok, err)
	}
	r := calls[0]
	if r.Spec.BoundObjectRef == nil || r.Spec.BoundObjectRef.Kind != "Pod" || r.Spec.BoundObjectRef.Name != "p" || r.Spec.BoundObjectRef.UID != "u1" ||
		!cmp.Equal(r.Spec.Audiences, []string{"vault"}) || *r.Spec.ExpirationSeconds != 1000 {
		t.Errorf("token request = %+v", r.Spec)
	}
	// Reused until 80% of its life (800s) less the jitter (≤10s) has passed.
	if tok, _ := get(now.Add(700 * time.Second)); tok != "tok!" || len(calls) != 1 {
		t.Errorf("at 700s: %q after %d requests", tok, len(calls))
	}
	if tok, _ := get(now.Add(801 * time.Second)); tok != "tok!!" || len(calls) != 2 {
		t.Errorf("at 801s: %q after %d requests", tok, len(calls))
	}
	// A failed refresh keeps the valid token; once expired it is an error.
	fail = errors.New("boom")
	if tok, err := get(now.Add(1700 * time.Second)); err != nil || tok != "tok!!" {
		t.Errorf("failed refresh of a valid token: %q, %v", tok, err)
	}
	if _, err := get(now.Add(1900 * time.Second)); err == nil || !strings.Contains(err.Error(), "expired and refresh failed: boom") {
		t.Errorf("failed refresh of an expired token: %v", err)
	}
	// Without a token yet, the error is upstream's "failed to fetch token".
	pod2 := pod.DeepCopy()
	pod2.UID = "u2"
	fail = apierrors.NewInternalError(errors.New("no signer"))
	if _, err := c.token(ctx, cs, pod2, proj, now); err == nil || !strings.HasPrefix(err.Error(), "failed to fetch token: ") {
		t.Errorf("first token failing: %v", err)
	}
	// A 24h token is refreshed after 24h less the jitter, not after 80%.
	fail = nil
	day := int64(48 * 3600)
	proj2 := &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &day}
	clock = now
	if _, err := c.token(ctx, cs, pod2, proj2, now); err != nil {
		t.Fatal(err)
	}
	n := len(calls)
	if calls[n-1].Spec.Audiences != nil {
		t.Errorf("no audience asked, request has %v", calls[n-1].Spec.Audiences)
	}
	c.token(ctx, cs, pod2, proj2, now.Add(23*time.Hour))
	c.token(ctx, cs, pod2, proj2, now.Add(24*time.Hour+time.Second))
	if len(calls) != n+1 {
		t.Errorf("requests after 23h and 24h: %d, want 1", len(calls)-n)
	}
	c.forget("u2", nil)
	for _, k := range c.keys() {
		if strings.Contains(k, "u2") {
			t.Errorf("token of a forgotten pod: %s", k)
		}
	}
}

func fileGID(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Gid)
	}
	return -1
}

func TestMountTimeoutMessage(t *testing.T) {
	want := "Unable to attach or mount volumes: unmounted volumes=[a b], unattached volumes=[], failed to process volumes=[]: context deadline exceeded"
	if got := mountTimeoutMessage([]string{"b", "a"}); got != want {
		t.Errorf("got %q", got)
	}
}
