package quota

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// storageClassSuffix joins a StorageClass name and a resource in a
// per-class quota name: gold.storageclass.storage.k8s.io/requests.storage.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

var claimCountName = ObjectCountName(schema.GroupResource{Resource: "persistentvolumeclaims"})

var claimResources = []corev1.ResourceName{corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage}

// ByStorageClass is the quota name of resource for the claims of a class.
func ByStorageClass(class string, resource corev1.ResourceName) corev1.ResourceName {
	return corev1.ResourceName(class + storageClassSuffix + string(resource))
}

type claims struct{}

func (claims) GroupResource() schema.GroupResource {
	return schema.GroupResource{Resource: "persistentvolumeclaims"}
}

// Handles: creates and updates (an expansion asks for more storage), and
// a status update that changes the storage allocated.
func (claims) Handles(op, subresource string, obj, old runtime.Object) bool {
	switch subresource {
	case "":
		return op == Create || op == Update
	case "status":
		c, ok1 := obj.(*corev1.PersistentVolumeClaim)
		o, ok2 := old.(*corev1.PersistentVolumeClaim)
		return ok1 && ok2 && c.Status.AllocatedResources.Storage().Cmp(*o.Status.AllocatedResources.Storage()) != 0
	}
	return false
}

func (claims) MatchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, n := range names {
		if n == claimCountName || len(intersect([]corev1.ResourceName{n}, claimResources)) > 0 {
			out = append(out, n)
			continue
		}
		for _, r := range claimResources {
			if strings.HasSuffix(string(n), storageClassSuffix+string(r)) {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

func (claims) MatchesScope(corev1.ScopedResourceSelectorRequirement, runtime.Object) (bool, error) {
	return false, nil
}

func (claims) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

// Usage: one claim, and the storage it asks for (or has been allocated,
// if more), also under its StorageClass's names.
func (claims) Usage(obj runtime.Object, _ time.Time) (corev1.ResourceList, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("expect *v1.PersistentVolumeClaim, got %T", obj)
	}
	out := corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: one(), claimCountName: one()}
	class := ClaimClass(pvc)
	if class != "" {
		out[ByStorageClass(class, corev1.ResourcePersistentVolumeClaims)] = one()
	}
	req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return out, nil
	}
	storage := req.DeepCopy()
	if alloc, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && alloc.Cmp(storage) > 0 {
		storage = alloc.DeepCopy()
	}
	storage.RoundUp(0) // whole bytes
	out[corev1.ResourceRequestsStorage] = storage
	if class != "" {
		out[ByStorageClass(class, corev1.ResourceRequestsStorage)] = storage
	}
	return out, nil
}

// ClaimClass is a claim's StorageClass: spec.storageClassName, else the
// beta annotation.
func ClaimClass(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return c
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}
