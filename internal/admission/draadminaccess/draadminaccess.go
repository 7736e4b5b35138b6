// Package draadminaccess enforces upstream's rule for administrative
// access to devices: a ResourceClaim or ResourceClaimTemplate whose
// request asks for adminAccess, or a claim status write that first grants
// it, is accepted only in a namespace labelled
// resource.kubernetes.io/admin-access=true. Upstream checks this in the
// claim and template strategies, where it reads the namespace; plainkube's
// registry strategies read nothing, so the check is a validating plugin
// answering upstream's 422 with upstream's field path and message.
package draadminaccess

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/admission"
)

// Name names the plugin (not an upstream admission plugin).
const Name = "DRAAdminAccess"

// namespaceLabel is the label that allows admin access in a namespace.
const namespaceLabel = "resource.kubernetes.io/admin-access"

var (
	claims       = schema.GroupResource{Group: resourcev1.GroupName, Resource: "resourceclaims"}
	templates    = schema.GroupResource{Group: resourcev1.GroupName, Resource: "resourceclaimtemplates"}
	namespaceGVR = corev1.SchemeGroupVersion.WithResource("namespaces")
)

// New is the plugin over the server's objects.
func New(objects admission.Objects) admission.Plugin {
	p := &plugin{objects: objects}
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{claims, templates},
		Operations: []admission.Operation{admission.Create, admission.Update}, Subresources: []string{"status"}, Validate: p.validate}
}

type plugin struct{ objects admission.Objects }

func (p *plugin) validate(ctx context.Context, a *admission.Attributes) error {
	path := p.adminAccessAsked(a)
	if path == nil {
		return nil
	}
	ns, err := p.objects.Get(ctx, namespaceGVR, "", a.Namespace)
	var errs field.ErrorList
	switch n, ok := ns.(*corev1.Namespace); {
	case err != nil:
		errs = field.ErrorList{field.InternalError(path, fmt.Errorf("could not retrieve namespace to verify admin access: %w", err))}
	case !ok || n.Labels[namespaceLabel] != "true":
		errs = field.ErrorList{field.Forbidden(path, fmt.Sprintf("admin access to devices requires the `%s: true` label on the containing namespace", namespaceLabel))}
	default:
		return nil
	}
	return apierrors.NewInvalid(a.Kind.GroupKind(), a.Name, errs)
}

// adminAccessAsked is the path of the first request (on a create of the
// spec) or allocation result (on a status write that newly grants it) asking
// for admin access, nil if none does. A main-resource update changes no spec
// (it is immutable), so it asks for nothing new.
func (p *plugin) adminAccessAsked(a *admission.Attributes) *field.Path {
	var requests []resourcev1.DeviceRequest
	switch obj := a.Object.(type) {
	case *resourcev1.ResourceClaim:
		if a.Subresource == "status" {
			old, _ := a.OldObject.(*resourcev1.ResourceClaim)
			if old != nil && grantedAt(old.Status.Allocation) != nil {
				return nil
			}
			return grantedAt(obj.Status.Allocation)
		}
		requests = obj.Spec.Devices.Requests
	case *resourcev1.ResourceClaimTemplate:
		requests = obj.Spec.Spec.Devices.Requests
	default:
		return nil
	}
	if a.Operation != admission.Create {
		return nil
	}
	for i, r := range requests {
		if r.Exactly != nil && r.Exactly.AdminAccess != nil && *r.Exactly.AdminAccess {
			return field.NewPath("spec", "devices", "requests").Index(i).Child("adminAccess")
		}
	}
	return nil
}

func grantedAt(a *resourcev1.AllocationResult) *field.Path {
	if a == nil {
		return nil
	}
	for i, r := range a.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess {
			return field.NewPath("status", "allocation", "devices", "results").Index(i).Child("adminAccess")
		}
	}
	return nil
}
