// Package defaultstorageclass is upstream's DefaultStorageClass admission
// plugin: a PersistentVolumeClaim created with no storageClassName (and
// no volume.beta.kubernetes.io/storage-class annotation) gets the name of
// the default StorageClass (annotation
// storageclass.kubernetes.io/is-default-class, or its beta form, "true");
// of several defaults, the newest, then the first by name, as upstream.
// With no default the claim is left without a class.
package defaultstorageclass
