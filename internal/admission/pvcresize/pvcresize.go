package pvcresize

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-helpers/storage/volume"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "PersistentVolumeClaimResize"

// Upstream's refusals, word for word.
var (
	errNotBound = errors.New("Only bound persistent volume claims can be expanded")
	errNoResize = errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize")
)

var storageClassesGVR = storagev1.SchemeGroupVersion.WithResource("storageclasses")

// New is the plugin over the server's objects: it validates updates of
// claims (not of their status).
func New(objects admission.Objects) admission.Plugin {
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{{Resource: "persistentvolumeclaims"}},
		Operations: []admission.Operation{admission.Update}, Validate: (&plugin{objects: objects}).validate}
}

type plugin struct{ objects admission.Objects }

func (p *plugin) validate(ctx context.Context, a *admission.Attributes) error {
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	old, ok := a.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	newSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	oldSize := old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	if old.Status.Phase != corev1.ClaimBound {
		return admission.Forbidden(a, errNotBound)
	}
	if !p.allowsExpansion(ctx, pvc, old) {
		return admission.Forbidden(a, errNoResize)
	}
	return nil
}

// allowsExpansion: the claim names the same class before and after, and
// that class exists and sets allowVolumeExpansion.
func (p *plugin) allowsExpansion(ctx context.Context, pvc, old *corev1.PersistentVolumeClaim) bool {
	class, oldClass := volume.GetPersistentVolumeClaimClass(pvc), volume.GetPersistentVolumeClaimClass(old)
	if class == "" || class != oldClass {
		return false
	}
	obj, err := p.objects.Get(ctx, storageClassesGVR, "", class)
	if err != nil {
		return false
	}
	sc, ok := obj.(*storagev1.StorageClass)
	return ok && sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
}
