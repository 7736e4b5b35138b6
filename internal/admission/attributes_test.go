package admission

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestForbiddenNamesTheObjectAsUpstream(t *testing.T) {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	for _, tc := range []struct {
		name string
		a    *Attributes
		want string
	}{
		{"by name", &Attributes{Resource: pods, Name: "web", Subresource: "status"}, `pods "web" is forbidden: no`},
		{"by generateName", &Attributes{Resource: pods, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"}}}, `pods "web-" is forbidden: no`},
		{"unknown", &Attributes{Resource: pods}, `pods "Unknown" is forbidden: no`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Forbidden(tc.a, errors.New("no"))
			if !apierrors.IsForbidden(err) || err.Error() != tc.want {
				t.Fatalf("got %v, want 403 %q", err, tc.want)
			}
		})
	}
	notFound := apierrors.NewNotFound(pods.GroupResource(), "x")
	if got := Forbidden(&Attributes{Resource: pods}, notFound); got != notFound {
		t.Fatalf("an API status error should pass through, got %v", got)
	}
}
