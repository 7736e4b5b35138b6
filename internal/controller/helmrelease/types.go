package helmrelease

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group, Version and Resource name the HelmRelease API.
const (
	Group    = "helm.plainkube.dev"
	Version  = "v1"
	Resource = "helmreleases"
	Kind     = "HelmRelease"
)

// HelmRelease is one helm release the cluster keeps as its spec says.
type HelmRelease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec   `json:"spec"`
	Status            Status `json:"status,omitempty"`
}

// Spec is what the release should be.
type Spec struct {
	Chart ChartSource `json:"chart"`
	// Version is the chart version (a semver constraint) to take from a
	// repository; empty: the newest.
	Version string `json:"version,omitempty"`
	// ReleaseName defaults to the HelmRelease's name.
	ReleaseName string `json:"releaseName,omitempty"`
	// TargetNamespace is where the release lives; default the
	// HelmRelease's namespace.
	TargetNamespace string `json:"targetNamespace,omitempty"`
	CreateNamespace bool   `json:"createNamespace,omitempty"`
	// ValuesFrom are merged in order, then Values over them.
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`
	Values     map[string]any    `json:"values,omitempty"`
	Install    ActionOptions     `json:"install,omitempty"`
	Upgrade    ActionOptions     `json:"upgrade,omitempty"`
	// DriftPolicy: Ignore (default), Report, Correct.
	DriftPolicy string `json:"driftPolicy,omitempty"`
	// CRDs: Create (default: those in crds/ at install only, as helm),
	// Skip, CreateReplace (also replaced at every upgrade).
	CRDs    string `json:"crds,omitempty"`
	Suspend bool   `json:"suspend,omitempty"`
}

// ChartSource is where the chart comes from: exactly one of them.
type ChartSource struct {
	// Path is a chart directory or archive on the server's file system.
	Path         string  `json:"path,omitempty"`
	ConfigMapRef *KeyRef `json:"configMapRef,omitempty"`
	SecretRef    *KeyRef `json:"secretRef,omitempty"`
	// RepoURL and Name: chart Name in the HTTP chart repository at RepoURL.
	RepoURL string `json:"repoURL,omitempty"`
	Name    string `json:"name,omitempty"`
	// OCI is an oci:// reference (without the tag: Version picks it).
	OCI string `json:"oci,omitempty"`
	// PlainHTTP reaches the OCI registry over HTTP rather than HTTPS
	// (helm's --plain-http).
	PlainHTTP bool `json:"plainHTTP,omitempty"`
}

// KeyRef is a key of a ConfigMap or Secret in the HelmRelease's namespace
// that holds a chart archive (.tgz).
type KeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// ValuesReference is a values file in a ConfigMap or Secret of the
// HelmRelease's namespace.
type ValuesReference struct {
	// Kind: ConfigMap or Secret.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Key defaults to values.yaml.
	Key      string `json:"key,omitempty"`
	Optional bool   `json:"optional,omitempty"`
}

// ActionOptions tune an install or an upgrade.
type ActionOptions struct {
	// Timeout of the action and of its waiting (default 5m).
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Wait for the release's resources to be ready (default true).
	Wait *bool `json:"wait,omitempty"`
	// Atomic: a failed install is uninstalled, a failed upgrade rolled
	// back (helm's --rollback-on-failure).
	Atomic bool `json:"atomic,omitempty"`
}

// Status is what the controller last saw and did.
type Status struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	// LastAppliedRevision is the helm revision of the last install or
	// upgrade that succeeded.
	LastAppliedRevision int    `json:"lastAppliedRevision,omitempty"`
	ChartName           string `json:"chartName,omitempty"`
	ChartVersion        string `json:"chartVersion,omitempty"`
	// ReleaseStatus is helm's status of the release's last revision.
	ReleaseStatus string `json:"releaseStatus,omitempty"`
	// LastAppliedDigest is the digest of the chart and values of
	// LastAppliedRevision; LastAttemptedDigest of the last attempt.
	LastAppliedDigest   string `json:"lastAppliedDigest,omitempty"`
	LastAttemptedDigest string `json:"lastAttemptedDigest,omitempty"`
	// Failures counts the attempts that failed in a row (the back-off).
	Failures        int          `json:"failures,omitempty"`
	LastAttemptedAt *metav1.Time `json:"lastAttemptedAt,omitempty"`
}

// Condition types and the policies' values.
const (
	ConditionReady    = "Ready"
	ConditionReleased = "Released"
	ConditionFailed   = "Failed"
	ConditionDrifted  = "Drifted"

	DriftIgnore  = "Ignore"
	DriftReport  = "Report"
	DriftCorrect = "Correct"

	CRDsCreate        = "Create"
	CRDsSkip          = "Skip"
	CRDsCreateReplace = "CreateReplace"
)

func (hr *HelmRelease) releaseName() string {
	if hr.Spec.ReleaseName != "" {
		return hr.Spec.ReleaseName
	}
	return hr.Name
}

func (hr *HelmRelease) targetNamespace() string {
	if hr.Spec.TargetNamespace != "" {
		return hr.Spec.TargetNamespace
	}
	return hr.Namespace
}

// DeepCopy copies the status.
func (s *Status) DeepCopy() *Status {
	out := *s
	out.Conditions = slices.Clone(s.Conditions)
	if s.LastAttemptedAt != nil {
		t := *s.LastAttemptedAt
		out.LastAttemptedAt = &t
	}
	return &out
}
