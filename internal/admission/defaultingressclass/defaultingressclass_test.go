package defaultingressclass

import (
	"context"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/admissiontest"
)

func TestDefaultIngressClass(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	class := func(name string, created time.Time, isDefault string) runtime.Object {
		c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
		if isDefault != "" {
			c.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: isDefault}
		}
		return c
	}
	for _, tt := range []struct {
		name    string
		classes []runtime.Object
		ing     networkingv1.Ingress
		want    *string
	}{
		{"no classes", nil, networkingv1.Ingress{}, nil},
		{"no default", []runtime.Object{class("a", at, ""), class("b", at, "false")}, networkingv1.Ingress{}, nil},
		{"the default", []runtime.Object{class("a", at, ""), class("nginx", at, "true")}, networkingv1.Ingress{}, ptr.To("nginx")},
		{"two defaults: the newest", []runtime.Object{class("older", at, "true"), class("newer", at.Add(time.Hour), "true")}, networkingv1.Ingress{}, ptr.To("newer")},
		{"two defaults at once: by name", []runtime.Object{class("zeta", at, "true"), class("alpha", at, "true")}, networkingv1.Ingress{}, ptr.To("alpha")},
		{"a class asked for", []runtime.Object{class("nginx", at, "true")}, networkingv1.Ingress{Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("traefik")}}, ptr.To("traefik")},
		{"the class annotation", []runtime.Object{class("nginx", at, "true")},
			networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/ingress.class": "x"}}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objects := admissiontest.Objects{ingressClassesGVR: tt.classes}
			ing := tt.ing.DeepCopy()
			a := &admission.Attributes{Operation: admission.Create, Resource: networkingv1.SchemeGroupVersion.WithResource("ingresses"), Object: ing}
			if err := (admission.Chain{New(objects)}).Mutate(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if got := ing.Spec.IngressClassName; (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("ingressClassName = %v, want %v", ptr.Deref(got, "<nil>"), ptr.Deref(tt.want, "<nil>"))
			}
		})
	}
}
