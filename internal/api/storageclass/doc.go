// Package storageclass holds upstream's rule for the default
// StorageClass, which the DefaultStorageClass admission plugin (a claim
// created without a class) and the PV binder (a claim left without one
// before any default existed, upstream's RetroactiveDefaultStorageClass)
// both apply.
package storageclass
