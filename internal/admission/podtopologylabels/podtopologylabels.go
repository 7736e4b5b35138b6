package podtopologylabels

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "PodTopologyLabels"

// Labels are the node labels copied, as upstream's default configuration.
var Labels = []string{corev1.LabelTopologyZone, corev1.LabelTopologyRegion}

var (
	pods     = schema.GroupResource{Resource: "pods"}
	nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")
)

// New is the plugin over the server's objects: it mutates pods and
// pods/binding being created.
func New(objects admission.Objects) admission.Plugin {
	p := &plugin{objects: objects}
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{pods}, Operations: []admission.Operation{admission.Create},
		Subresources: []string{"binding"}, Mutate: p.mutate}
}

type plugin struct{ objects admission.Objects }

func (p *plugin) mutate(ctx context.Context, a *admission.Attributes) error {
	switch a.Subresource {
	case "":
		pod, ok := a.Object.(*corev1.Pod)
		if !ok {
			return fmt.Errorf("expected Pod but got %T", a.Object)
		}
		if pod.Spec.NodeName == "" {
			return nil
		}
		return p.copyLabels(ctx, pod.Spec.NodeName, &pod.Labels)
	case "binding":
		b, ok := a.Object.(*corev1.Binding)
		if !ok {
			return fmt.Errorf("expected Binding but got %s", a.Kind.Kind)
		}
		// As upstream: only a target of kind Node (what schedulers send).
		if b.Target.Kind != "Node" {
			return nil
		}
		return p.copyLabels(ctx, b.Target.Name, &b.Labels)
	}
	return nil
}

// copyLabels sets the topology labels of node nodeName in *labels,
// overwriting what is there.
func (p *plugin) copyLabels(ctx context.Context, nodeName string, labels *map[string]string) error {
	obj, err := p.objects.Get(ctx, nodesGVR, "", nodeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return fmt.Errorf("node %s: read a %T", nodeName, obj)
	}
	for _, key := range Labels {
		value, ok := node.Labels[key]
		if !ok {
			continue
		}
		if *labels == nil {
			*labels = map[string]string{}
		}
		(*labels)[key] = value
	}
	return nil
}
