package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "demo.plainkube.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder registers the types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() { SchemeBuilder.Register(&App{}, &AppList{}) }

// ConditionReady is the App's condition: True once every replica is
// updated and ready.
const ConditionReady = "Ready"

// AppSpec is what the user wants.
type AppSpec struct {
	// Image is the container image to run.
	Image string `json:"image"`
	// Replicas is the number of pods (default 1).
	Replicas *int32 `json:"replicas,omitempty"`
	// TerminationGracePeriodSeconds is given to the pods (default: the
	// pod's default, 30).
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// AppStatus is what the controller observed.
type AppStatus struct {
	// ObservedGeneration is the generation of the spec last acted on.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is the number of pods the Deployment has.
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of them that are ready.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Deployment names the Deployment the App runs as.
	Deployment string `json:"deployment,omitempty"`
	// Conditions: Ready.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// App runs an image as a Deployment.
type App struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AppSpec   `json:"spec,omitempty"`
	Status AppStatus `json:"status,omitempty"`
}

// AppList is a list of Apps.
type AppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []App `json:"items"`
}
