// Package crcontroller is a small controller-runtime controller, written as
// kubebuilder scaffolds one, that plainkube runs and tests with pkg/testenv.
//
// An App (demo.plainkube.dev/v1alpha1, config/crd) names an image and a
// replica count. The AppReconciler keeps a Deployment of the same name
// that the App owns as its controller — so deleting the App lets the
// garbage collector remove the Deployment, its ReplicaSets and their pods —
// and reports the Deployment's progress in the App's status: replicas,
// readyReplicas and a Ready condition.
package crcontroller
