package noderestriction

import (
	"context"
	"net/http"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/admissiontest"
	"plainkube.dev/plainkube/internal/auth"
)

// signerRequests allows nodes to request pod certificates of the signers
// it lists (as RBAC names them, with ":" for "/").
type signerRequests []string

func (s signerRequests) Authorize(_ context.Context, at auth.Attributes) (auth.Decision, string, error) {
	for _, name := range s {
		if at.Verb == "request-serviceaccounts-podcertificate-signer" && at.Resource == name && at.Name == "app" {
			return auth.Allow, "", nil
		}
	}
	return auth.NoOpinion, "", nil
}

func TestAdmitPodCertificateRequest(t *testing.T) {
	ctx := context.Background()
	pod := func(name, node string, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: annotations},
			Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: "app", Volumes: []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{
				Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/one"}}}}}}}}}
	}
	objects := admissiontest.Objects{
		nodesV1:    {&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1"}}},
		podsV1:     {pod("web", "n1", nil), pod("far", "n2", nil), pod("static", "n1", map[string]string{corev1.MirrorPodAnnotationKey: "h"})},
		accountsV1: {&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "uid-app"}}},
	}
	p := New(objects, signerRequests{"example.com:two"})
	request := func(change func(*certificatesv1.PodCertificateRequestSpec)) *certificatesv1.PodCertificateRequest {
		r := &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}, Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: "example.com/one", PodName: "web", PodUID: "uid-web", ServiceAccountName: "app", ServiceAccountUID: "uid-app",
			NodeName: "n1", NodeUID: "uid-n1"}}
		if change != nil {
			change(&r.Spec)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		op   admission.Operation
		obj  *certificatesv1.PodCertificateRequest
		// want is "" (admitted) or the refusal's message; code its status.
		want string
		code int32
	}{
		{"own pod's volume signer", admission.Create, request(nil), "", 0},
		{"authorized signer", admission.Create, request(func(s *certificatesv1.PodCertificateRequestSpec) { s.SignerName = "example.com/two" }), "", 0},
		{"another signer", admission.Create, request(func(s *certificatesv1.PodCertificateRequestSpec) { s.SignerName = "example.com/three" }),
			`podcertificaterequests.certificates.k8s.io "r" is forbidden: pod "ns/web" does not mount a podCertificate projected volume for signer "example.com/three"`, 403},
		{"update", admission.Update, request(nil), `podcertificaterequests.certificates.k8s.io "r" is forbidden: unexpected operation UPDATE`, 403},
		{"another node", admission.Create, request(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeName = "n2" }),
			`podcertificaterequests.certificates.k8s.io "r" is forbidden: PodCertificateRequest.Spec.NodeName="n2", which is not the requesting node "n1"`, 403},
		{"stale node UID", admission.Create, request(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeUID = "old" }),
			`PodCertificateRequest for pod "ns/web" names node UID "old", inconsistent with the running node ("uid-n1")`, http.StatusInternalServerError},
		{"pod elsewhere", admission.Create, request(func(s *certificatesv1.PodCertificateRequestSpec) { s.PodName, s.PodUID = "far", "uid-far" }),
			`podcertificaterequests.certificates.k8s.io "r" is forbidden: pod "ns/far" is not running on node "n1" named in the PodCertificateRequest`, 403},
		{"mirror pod", admission.Create, request(func(s *certificatesv1.PodCertificateRequestSpec) { s.PodName, s.PodUID = "static", "uid-static" }),
			`podcertificaterequests.certificates.k8s.io "r" is forbidden: pod "ns/static" is a mirror pod`, 403},
		{"other account", admission.Create, request(func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountName = "default" }),
			`podcertificaterequests.certificates.k8s.io "r" is forbidden: PodCertificateRequest for pod "ns/web" contains serviceAccountName ("default") that differs from running pod ("app")`, 403},
		{"stale account UID", admission.Create, request(func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountUID = "old" }),
			`PodCertificateRequest for pod "ns/web" names service account UID "old", which differs from the running service account ("uid-app")`, http.StatusInternalServerError},
	} {
		a := &admission.Attributes{Operation: tc.op, Resource: certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests"),
			Namespace: "ns", Name: "r", Object: tc.obj, User: nodeUser("n1")}
		if !p.Handles(a) {
			t.Fatalf("%s: not handled", tc.name)
		}
		err := p.Mutate(ctx, a)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		case tc.want != "":
			if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != tc.code {
				t.Errorf("%s: %#v, want code %d", tc.name, err, tc.code)
			}
		}
	}
	// Others than nodes are not restricted.
	a := &admission.Attributes{Operation: admission.Create, Resource: certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests"),
		Namespace: "ns", Name: "r", Object: request(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeName = "n2" }), User: &auth.User{Name: "admin"}}
	if err := p.Mutate(ctx, a); err != nil {
		t.Errorf("an admin's request: %v", err)
	}
}
