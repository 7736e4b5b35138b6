package policy

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// MutatingName is the name of the MutatingAdmissionPolicy plugin.
const MutatingName = "MutatingAdmissionPolicy"

var mutatingPolicies = schema.GroupResource{Group: admissionv1.GroupName, Resource: "mutatingadmissionpolicies"}

// RefuseMutatingPolicies stands at the MutatingAdmissionPolicy slot
// until mutations are carried out: creating a MutatingAdmissionPolicy is
// refused with 501 Not Implemented, so that no policy is stored and then
// silently ignored.
func RefuseMutatingPolicies() admission.Plugin {
	return admission.Plugin{
		Name:       MutatingName,
		Resources:  []schema.GroupResource{mutatingPolicies},
		Operations: []admission.Operation{admission.Create},
		Validate: func(_ context.Context, a *admission.Attributes) error {
			return &apierrors.StatusError{ErrStatus: metav1.Status{
				Status:  metav1.StatusFailure,
				Code:    http.StatusNotImplemented,
				Reason:  metav1.StatusReason("NotImplemented"),
				Details: &metav1.StatusDetails{Group: mutatingPolicies.Group, Kind: mutatingPolicies.Resource, Name: a.Name},
				Message: fmt.Sprintf("%s %q: MutatingAdmissionPolicy is not implemented by this server yet; "+
					"the policy is refused rather than stored and ignored", mutatingPolicies, a.Name),
			}}
		},
	}
}
