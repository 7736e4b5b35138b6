package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSecret(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"},
		Data: map[string][]byte{"a": []byte("1"), "b": []byte("old")}, StringData: map[string]string{"b": "new"}}
	expect(t, create(t, "secrets", s), "")
	if s.Type != corev1.SecretTypeOpaque || string(s.Data["b"]) != "new" || s.StringData != nil {
		t.Errorf("defaults: type %q data %q stringData %v", s.Type, s.Data, s.StringData)
	}
	if f := lookup(t, "secrets").Strategy.SelectableFields(s); f["type"] != "Opaque" {
		t.Errorf("fields %v", f)
	}

	for _, tc := range []struct {
		name string
		s    *corev1.Secret
		want string
	}{
		{"key", &corev1.Secret{Data: map[string][]byte{"a/b": nil}},
			`data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
		{"tls", &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil}}, "data[tls.key]: Required value"},
		{"dockerconfigjson", &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte("{")}},
			`data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": unexpected end of JSON input`},
		{"basic auth", &corev1.Secret{Type: corev1.SecretTypeBasicAuth}, "data[username]: Required value"},
		{"service account token", &corev1.Secret{Type: corev1.SecretTypeServiceAccountToken},
			"metadata.annotations[kubernetes.io/service-account.name]: Required value"},
		{"size", &corev1.Secret{Data: map[string][]byte{"big": []byte(strings.Repeat("x", 1<<20+1))}},
			"data: Too long: may not be more than 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.Name, tc.s.Namespace = "s", "default"
			expect(t, create(t, "secrets", tc.s), tc.want)
		})
	}

	old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Data: map[string][]byte{"a": []byte("1")}, Immutable: ptr.To(true)}
	create(t, "secrets", old)
	n := old.DeepCopy()
	n.Data["a"] = []byte("2")
	expect(t, update(t, "secrets", n, old), "data: Forbidden: field is immutable when `immutable` is set")
	n = old.DeepCopy()
	n.Immutable = nil
	expect(t, update(t, "secrets", n, old), "immutable: Forbidden: field is immutable when `immutable` is set")
	n = old.DeepCopy()
	n.Type = corev1.SecretTypeBasicAuth
	n.Data["username"] = nil
	expect(t, update(t, "secrets", n, old), `type: Invalid value: "kubernetes.io/basic-auth": field is immutable`)
}

func TestConfigMap(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
		Data: map[string]string{"k": "v", "bad key": ""}, BinaryData: map[string][]byte{"k": nil}}
	errs := create(t, "configmaps", cm)
	expect(t, errs, `data[k]: Invalid value: "k": duplicate of key present in binaryData`)
	expect(t, errs, `data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`)

	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"k": "v"}, Immutable: ptr.To(true)}
	expect(t, create(t, "configmaps", old), "")
	n := old.DeepCopy()
	n.Data["k"] = "w"
	expect(t, update(t, "configmaps", n, old), "data: Forbidden: field is immutable when `immutable` is set")
	n = old.DeepCopy()
	n.Labels = map[string]string{"a": "b"}
	expect(t, update(t, "configmaps", n, old), "")

	big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"k": strings.Repeat("x", 1<<20+1)}}
	expect(t, create(t, "configmaps", big), "[]: Too long: may not be more than 1048576 bytes")
}

func TestServiceAccountAndFinalizers(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "default", Finalizers: []string{"custom"}}}
	expect(t, create(t, "serviceaccounts", sa), `metadata.finalizers[0]: Invalid value: "custom": name is neither a standard finalizer name nor is it fully qualified`)
	sa.Finalizers = []string{"example.com/custom", "orphan"}
	expect(t, create(t, "serviceaccounts", sa), "")
}
