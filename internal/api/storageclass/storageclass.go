package storageclass

import (
	storagev1 "k8s.io/api/storage/v1"
)

// Upstream's annotations marking a default class.
const (
	IsDefaultAnnotation     = "storageclass.kubernetes.io/is-default-class"
	BetaIsDefaultAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// IsDefault reports whether sc is annotated default (either annotation
// "true").
func IsDefault(sc *storagev1.StorageClass) bool {
	return sc.Annotations[IsDefaultAnnotation] == "true" || sc.Annotations[BetaIsDefaultAnnotation] == "true"
}

// Default picks the default of classes as upstream: of those annotated
// default, the newest, then the first by name; nil if none is.
func Default(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	var best *storagev1.StorageClass
	for _, sc := range classes {
		if !IsDefault(sc) {
			continue
		}
		if best == nil {
			best = sc
			continue
		}
		t, bt := sc.CreationTimestamp.UnixNano(), best.CreationTimestamp.UnixNano()
		if t > bt || t == bt && sc.Name < best.Name {
			best = sc
		}
	}
	return best
}
