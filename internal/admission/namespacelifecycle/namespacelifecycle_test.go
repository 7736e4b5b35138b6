package namespacelifecycle

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/admissiontest"
)

func TestLifecycle(t *testing.T) {
	now := metav1.Now()
	objects := admissiontest.Objects{namespacesGVR: {
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
	}}
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	podKind := corev1.SchemeGroupVersion.WithKind("Pod")
	nsKind := corev1.SchemeGroupVersion.WithKind("Namespace")
	nsRes := corev1.SchemeGroupVersion.WithResource("namespaces")
	pod := func(ns, name, generate string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, GenerateName: generate}}
	}
	for _, tt := range []struct {
		name string
		a    *admission.Attributes
		// want: "" (admitted), or the error's code and message.
		code int32
		msg  string
	}{
		{"delete default", &admission.Attributes{Operation: admission.Delete, Kind: nsKind, Resource: nsRes, Name: "default"},
			403, `namespaces "default" is forbidden: this namespace may not be deleted`},
		{"delete kube-system", &admission.Attributes{Operation: admission.Delete, Kind: nsKind, Resource: nsRes, Name: "kube-system"},
			403, `namespaces "kube-system" is forbidden: this namespace may not be deleted`},
		{"delete kube-public", &admission.Attributes{Operation: admission.Delete, Kind: nsKind, Resource: nsRes, Name: "kube-public"}, 403, ""},
		{"delete another namespace", &admission.Attributes{Operation: admission.Delete, Kind: nsKind, Resource: nsRes, Name: "app"}, 0, ""},
		{"create a namespace", &admission.Attributes{Operation: admission.Create, Kind: nsKind, Resource: nsRes, Name: "new"}, 0, ""},
		{"create in an active namespace", &admission.Attributes{Operation: admission.Create, Kind: podKind, Resource: pods, Namespace: "app", Name: "p", Object: pod("app", "p", "")}, 0, ""},
		{"create in a missing namespace", &admission.Attributes{Operation: admission.Create, Kind: podKind, Resource: pods, Namespace: "gone", Name: "p", Object: pod("gone", "p", "")},
			404, `namespaces "gone" not found`},
		{"create in a terminating namespace", &admission.Attributes{Operation: admission.Create, Kind: podKind, Resource: pods, Namespace: "leaving", Object: pod("leaving", "", "web-")},
			403, `pods "web-" is forbidden: unable to create new content in namespace leaving because it is being terminated`},
		{"binding in a terminating namespace", &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Binding"), Resource: pods, Subresource: "binding", Namespace: "leaving", Name: "p",
			Object: &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}}}, 403, ""},
		{"delete in a missing namespace", &admission.Attributes{Operation: admission.Delete, Kind: podKind, Resource: pods, Namespace: "gone", Name: "p"}, 0, ""},
		{"update in a terminating namespace", &admission.Attributes{Operation: admission.Update, Kind: podKind, Resource: pods, Namespace: "leaving", Name: "p", Object: pod("leaving", "p", "")}, 0, ""},
		{"cluster-scoped create", &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Node"), Resource: corev1.SchemeGroupVersion.WithResource("nodes"), Name: "n"}, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chain := admission.Chain{New(objects)}
			err := chain.Mutate(context.Background(), tt.a)
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			status, ok := err.(apierrors.APIStatus)
			if !ok || status.Status().Code != tt.code {
				t.Fatalf("got %v, want a %d", err, tt.code)
			}
			if tt.msg != "" && err.Error() != tt.msg {
				t.Errorf("message %q, want %q", err.Error(), tt.msg)
			}
			if strings.Contains(tt.name, "terminating") && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				t.Errorf("no NamespaceTerminating cause: %+v", status.Status().Details)
			}
		})
	}
}
