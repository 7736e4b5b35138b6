// Package defaultclass is how upstream chooses the default among classes
// (StorageClasses, IngressClasses) annotated as the default: the newest,
// the first by name among those created at once. The defaulting admission
// plugins and the PersistentVolume binder share it.
package defaultclass
