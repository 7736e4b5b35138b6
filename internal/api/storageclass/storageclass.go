package storageclass

import (
	storagev1 "k8s.io/api/storage/v1"

	"plainkube.dev/plainkube/internal/api/defaultclass"
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
	return defaultclass.Newest(classes, IsDefault)
}
