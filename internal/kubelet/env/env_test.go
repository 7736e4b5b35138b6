package env

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "B": "b", "EMPTY": ""}
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(B)z", "xaybz"},
		{"$(EMPTY)", ""},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$a"},
		{"$A", "$A"},
		{"$", "$"},
		{"a$", "a$"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"$(A)$(B", "a$(B"},
	}
	for _, tt := range tests {
		if got := expand(tt.in, lookup(vars)); got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestContainerEnv(t *testing.T) {
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1",
			Labels: map[string]string{"app": "web", "tier": "fe"}, Annotations: map[string]string{"note": "x"}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"},
	}
	src := Source{
		ConfigMaps: map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{"k": "v", "k2": "v2", "bad-name": "x"}, BinaryData: map[string][]byte{"bin": []byte("b")}}},
		Secrets:    map[string]*corev1.Secret{"s": {Data: map[string][]byte{"pw": []byte("hunter2")}}},
		PodIPs:     []string{"10.42.0.5"}, HostIPs: []string{"192.0.2.1"},
	}
	cmKey := func(name, key string, opt bool) *corev1.EnvVarSource {
		s := &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
		if opt {
			s.Optional = &yes
		}
		return &corev1.EnvVarSource{ConfigMapKeyRef: s}
	}
	secKey := func(name, key string, opt bool) *corev1.EnvVarSource {
		s := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
		if opt {
			s.Optional = &yes
		}
		return &corev1.EnvVarSource{SecretKeyRef: s}
	}
	field := func(p string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: p}}
	}
	cmFrom := func(name, prefix string, opt bool) corev1.EnvFromSource {
		r := &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
		if opt {
			r.Optional = &yes
		}
		return corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: r}
	}
	tests := []struct {
		name    string
		c       corev1.Container
		want    string // NAME=value;…
		wantErr string
	}{
		{name: "plain and expanded",
			c:    corev1.Container{Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "$(A)-$(C)"}, {Name: "C", Value: "3"}, {Name: "D", Value: "$(C)"}}},
			want: "A=1;B=1-$(C);C=3;D=3"},
		{name: "redefinition keeps the first position",
			c:    corev1.Container{Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "A", Value: "$(A)$(B)"}}},
			want: "A=12;B=2"},
		{name: "key refs",
			c:    corev1.Container{Env: []corev1.EnvVar{{Name: "K", ValueFrom: cmKey("cm", "k", false)}, {Name: "PW", ValueFrom: secKey("s", "pw", false)}}},
			want: "K=v;PW=hunter2"},
		{name: "binaryData is not for env, as upstream", c: corev1.Container{Env: []corev1.EnvVar{{Name: "BIN", ValueFrom: cmKey("cm", "bin", false)}}},
			wantErr: `env BIN: couldn't find key bin in ConfigMap ns/cm`},
		{name: "optional refs to what is absent are unset",
			c: corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("nope", "k", true)}, {Name: "B", ValueFrom: cmKey("cm", "nokey", true)},
				{Name: "C", ValueFrom: secKey("nope", "k", true)}, {Name: "D", ValueFrom: secKey("s", "nokey", true)}, {Name: "E", Value: "$(A)"}}},
			want: "E=$(A)"},
		{name: "missing configmap", c: corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("nope", "k", false)}}},
			wantErr: `env A: configmap "nope" not found`},
		{name: "missing configmap key", c: corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("cm", "nokey", false)}}},
			wantErr: `env A: couldn't find key nokey in ConfigMap ns/cm`},
		{name: "missing secret key", c: corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: secKey("s", "nokey", false)}}},
			wantErr: `env A: couldn't find key nokey in Secret ns/s`},
		{name: "field refs",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "NAME", ValueFrom: field("metadata.name")}, {Name: "NS", ValueFrom: field("metadata.namespace")},
				{Name: "UID", ValueFrom: field("metadata.uid")}, {Name: "APP", ValueFrom: field("metadata.labels['app']")},
				{Name: "NOTE", ValueFrom: field("metadata.annotations['note']")}, {Name: "NODE", ValueFrom: field("spec.nodeName")},
				{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
				{Name: "IP", ValueFrom: field("status.podIP")}, {Name: "HOST", ValueFrom: field("status.hostIP")},
				{Name: "LABELS", ValueFrom: field("metadata.labels")}}},
			want: "NAME=p;NS=ns;UID=u1;APP=web;NOTE=x;NODE=n1;SA=sa;IP=10.42.0.5;HOST=192.0.2.1;LABELS=app=\"web\"\ntier=\"fe\""},
		{name: "unsupported field", c: corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: field("spec.nope")}}},
			wantErr: `env A: unsupported fieldPath "spec.nope"`},
		{name: "envFrom, then env overriding",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{cmFrom("cm", "", false), cmFrom("cm", "P_", false), cmFrom("cm", "BAD=", false), cmFrom("nope", "", true),
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}},
				Env: []corev1.EnvVar{{Name: "k", Value: "over-$(k2)"}}},
			want: "bad-name=x;k=over-v2;k2=v2;P_bad-name=x;P_k=v;P_k2=v2;pw=hunter2"},
		{name: "envFrom missing", c: corev1.Container{EnvFrom: []corev1.EnvFromSource{cmFrom("nope", "", false)}},
			wantErr: `configmap "nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Resolve(pod, &tt.c, src)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, e := range env {
				parts = append(parts, e.Name+"="+e.Value)
			}
			if got := strings.Join(parts, ";"); got != tt.want {
				t.Errorf("env = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEnvRefsAndArgs(t *testing.T) {
	c := &corev1.Container{
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}},
		Env: []corev1.EnvVar{
			{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}}},
			{Name: "Y", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}}},
		},
	}
	cms, secrets := Refs(c)
	if !cmp.Equal(cms, []string{"a", "b"}) || !cmp.Equal(secrets, []string{"s"}) {
		t.Errorf("refs = %v %v", cms, secrets)
	}
	got := ExpandAll([]string{"echo", "$(X)", "$$(X)", "$(Z)"}, []Var{{"X", "x"}})
	if want := []string{"echo", "x", "$(X)", "$(Z)"}; !cmp.Equal(got, want) {
		t.Errorf("args = %q", got)
	}
	if ExpandAll(nil, nil) != nil {
		t.Error("nil args must stay nil (the image's)")
	}
}

func TestServiceEnv(t *testing.T) {
	svc := func(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
	}
	services := []*corev1.Service{
		svc("default", "kubernetes", "10.43.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}),
		svc("app", "my-web", "10.43.0.9", corev1.ServicePort{Port: 80}, corev1.ServicePort{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP}),
		svc("app", "headless", "None", corev1.ServicePort{Port: 80}),
		svc("other", "elsewhere", "10.43.0.7", corev1.ServicePort{Port: 80}),
	}
	got := ServiceVars(services, "app", nil)
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST":       "10.43.0.1",
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.43.0.1:443",
		"KUBERNETES_PORT_443_TCP":       "tcp://10.43.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":  "443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.43.0.1",
		"MY_WEB_SERVICE_HOST":           "10.43.0.9",
		"MY_WEB_SERVICE_PORT":           "80",
		"MY_WEB_SERVICE_PORT_DNS_UDP":   "53",
		"MY_WEB_PORT":                   "tcp://10.43.0.9:80",
		"MY_WEB_PORT_80_TCP":            "tcp://10.43.0.9:80",
		"MY_WEB_PORT_80_TCP_PROTO":      "tcp",
		"MY_WEB_PORT_80_TCP_PORT":       "80",
		"MY_WEB_PORT_80_TCP_ADDR":       "10.43.0.9",
		"MY_WEB_PORT_53_UDP":            "udp://10.43.0.9:53",
		"MY_WEB_PORT_53_UDP_PROTO":      "udp",
		"MY_WEB_PORT_53_UDP_PORT":       "53",
		"MY_WEB_PORT_53_UDP_ADDR":       "10.43.0.9",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	no := false
	if got := ServiceVars(services, "app", &no); len(got) != 8 || got["KUBERNETES_SERVICE_HOST"] != "10.43.0.1" {
		t.Errorf("without service links: %v", got)
	}
	// Service variables expand in env values and args; the container's
	// own variables win.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "app"}}
	c := &corev1.Container{Env: []corev1.EnvVar{{Name: "URL", Value: "https://$(KUBERNETES_SERVICE_HOST)"}, {Name: "MY_WEB_SERVICE_PORT", Value: "8080"}}}
	env, err := Resolve(pod, c, Source{Services: got})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range env {
		m[e.Name] = e.Value
	}
	if m["URL"] != "https://10.43.0.1" || m["MY_WEB_SERVICE_PORT"] != "8080" || m["KUBERNETES_PORT"] != "tcp://10.43.0.1:443" {
		t.Errorf("env = %v", m)
	}
}

func TestContainerResourceEnv(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}}}}}}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "other",
		Env: []corev1.EnvVar{
			{Name: "OWN_CPU_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}}},
			{Name: "C_MEM_REQ", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "requests.memory"}}},
			{Name: "OWN_MEM_REQ", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory"}}},
			{Name: "HOSTS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIPs"}}},
			{Name: "PODS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
		}})
	env, err := Resolve(pod, &pod.Spec.Containers[1], Source{Allocatable: allocatable,
		PodIPs: []string{"10.42.0.5", "fd00::5"}, HostIPs: []string{"192.0.2.1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Var{{"OWN_CPU_LIMIT", "2000"}, {"C_MEM_REQ", "33554432"}, {"OWN_MEM_REQ", "0"}, {"HOSTS", "192.0.2.1"}, {"PODS", "10.42.0.5,fd00::5"}}
	if d := cmp.Diff(want, env); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	c := corev1.Container{Name: "x", Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}}}}}
	if _, err := Resolve(pod, &c, Source{}); err == nil || !strings.Contains(err.Error(), `container "nope" not found`) {
		t.Errorf("unknown container: %v", err)
	}
}
