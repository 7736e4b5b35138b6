package namespacelifecycle

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "NamespaceLifecycle"

// Immortal are the namespaces that may not be deleted, as upstream's
// default.
var Immortal = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}

var (
	namespacesGVR = corev1.SchemeGroupVersion.WithResource("namespaces")
	namespaceKind = corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind()
	// accessReviews may be created in any namespace: answering that it
	// does not exist would tell who may not know.
	accessReviews = schema.GroupResource{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}
)

// New is the plugin over the server's objects. It sees creates (of
// subresources too) and deletes.
func New(objects admission.Objects) admission.Plugin {
	return admission.Plugin{Name: Name, Operations: []admission.Operation{admission.Create, admission.Delete},
		Subresources: []string{"*"}, Mutate: (&plugin{objects: objects}).admit}
}

type plugin struct{ objects admission.Objects }

func (p *plugin) admit(ctx context.Context, a *admission.Attributes) error {
	isNamespace := a.Kind.GroupKind() == namespaceKind && a.Subresource == ""
	if isNamespace {
		if a.Operation == admission.Delete && immortal(a.Name) {
			return apierrors.NewForbidden(a.GroupResource(), a.Name, errors.New("this namespace may not be deleted"))
		}
		return nil
	}
	if a.Namespace == "" || a.Operation != admission.Create || a.GroupResource() == accessReviews {
		return nil
	}
	obj, err := p.objects.Get(ctx, namespacesGVR, "", a.Namespace)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		return apierrors.NewInternalError(err)
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok || (ns.Status.Phase != corev1.NamespaceTerminating && ns.DeletionTimestamp == nil) {
		return nil
	}
	err = apierrors.NewForbidden(a.GroupResource(), objectName(a), fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	status := err.(*apierrors.StatusError)
	status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    corev1.NamespaceTerminatingCause,
		Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
		Field:   "metadata.namespace",
	})
	return err
}

func immortal(name string) bool {
	for _, n := range Immortal {
		if n == name {
			return true
		}
	}
	return false
}

// objectName names the object in a refusal as upstream does: its name, or
// its generateName before one is generated, or "Unknown".
func objectName(a *admission.Attributes) string {
	if m, err := meta.Accessor(a.Object); err == nil {
		if n := m.GetName(); n != "" {
			return n
		}
		if n := m.GetGenerateName(); n != "" {
			return n
		}
	}
	if a.Name != "" {
		return a.Name
	}
	return "Unknown"
}
