package defaultstorageclass

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "DefaultStorageClass"

// Upstream's annotations.
const (
	IsDefaultAnnotation     = "storageclass.kubernetes.io/is-default-class"
	BetaIsDefaultAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
	BetaClassAnnotation     = "volume.beta.kubernetes.io/storage-class"
)

var storageClassesGVR = storagev1.SchemeGroupVersion.WithResource("storageclasses")

// New is the plugin over the server's objects: it mutates claims being
// created.
func New(objects admission.Objects) admission.Plugin {
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{{Resource: "persistentvolumeclaims"}},
		Operations: []admission.Operation{admission.Create}, Mutate: (&plugin{objects: objects}).mutate}
}

type plugin struct{ objects admission.Objects }

func (p *plugin) mutate(ctx context.Context, a *admission.Attributes) error {
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Spec.StorageClassName != nil {
		return nil
	}
	if _, ok := pvc.Annotations[BetaClassAnnotation]; ok {
		return nil
	}
	objs, err := p.objects.List(ctx, storageClassesGVR, "")
	if err != nil {
		return admission.Forbidden(a, err)
	}
	if def := Default(objs); def != nil {
		name := def.Name
		pvc.Spec.StorageClassName = &name
	}
	return nil
}

// Default picks the default class of objs: of those annotated default,
// the newest, then the first by name; nil if none is.
func Default(objs []runtime.Object) *storagev1.StorageClass {
	return admission.NewestOf(objs, func(sc *storagev1.StorageClass) bool {
		return sc.Annotations[IsDefaultAnnotation] == "true" || sc.Annotations[BetaIsDefaultAnnotation] == "true"
	})
}
