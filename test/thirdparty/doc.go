// Package thirdparty runs third-party Kubernetes controllers, unchanged, as
// libraries against a plainkube control plane started by pkg/testenv.
//
// The first is the CSI snapshot controller of kubernetes-csi/external-snapshotter
// (module github.com/kubernetes-csi/external-snapshotter/v8, package
// pkg/common-controller): a client-go controller in the classic
// sample-controller mould, with its own CRDs (VolumeSnapshot,
// VolumeSnapshotContent, VolumeSnapshotClass and the VolumeGroupSnapshot
// trio, copied unchanged into testdata/crd from the client/v8 module's
// config/crd), a generated clientset, shared informer factory and listers
// (module github.com/kubernetes-csi/external-snapshotter/client/v8),
// rate-limited workqueues, status subresource updates, finalizers and
// events. The tests wire it exactly as its cmd/snapshot-controller does and
// play the part of the CSI sidecar (which would talk to a storage driver)
// by setting VolumeSnapshotContent status.
//
// Only the tests use this package; it has no code of its own.
package thirdparty
