package defaultingressclass

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "DefaultIngressClass"

var ingressClassesGVR = networkingv1.SchemeGroupVersion.WithResource("ingressclasses")

// New is the plugin over the server's objects: it mutates Ingresses being
// created.
func New(objects admission.Objects) admission.Plugin {
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{{Group: networkingv1.GroupName, Resource: "ingresses"}},
		Operations: []admission.Operation{admission.Create}, Mutate: (&plugin{objects: objects}).mutate}
}

type plugin struct{ objects admission.Objects }

func (p *plugin) mutate(ctx context.Context, a *admission.Attributes) error {
	ing, ok := a.Object.(*networkingv1.Ingress)
	if !ok || a.Subresource != "" || ing.Spec.IngressClassName != nil {
		return nil
	}
	if _, ok := ing.Annotations[networkingv1beta1.AnnotationIngressClass]; ok {
		return nil
	}
	objs, err := p.objects.List(ctx, ingressClassesGVR, "")
	if err != nil {
		return admission.Forbidden(a, err)
	}
	def := admission.NewestOf(objs, func(c *networkingv1.IngressClass) bool {
		return c.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true"
	})
	if def != nil {
		name := def.Name
		ing.Spec.IngressClassName = &name
	}
	return nil
}
