// Package v1alpha1 is the demo.plainkube.dev/v1alpha1 API of the example
// controller: an App runs an image as a Deployment of spec.replicas pods.
//
// The types are written as kubebuilder would scaffold them; DeepCopy
// methods, which controller-gen generates, are written out by hand in
// zz_deepcopy.go so that the example needs no code generator.
package v1alpha1
