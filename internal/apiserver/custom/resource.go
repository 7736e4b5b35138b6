package custom

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	utilversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"plainkube.dev/plainkube/internal/registry"
)

// Resource is one resource taught to the server at run time: every
// version of one ResourceDefinition. Package apiextensions builds it
// from the CRD; the API server's SetCustomResources serves it. Objects are
// *unstructured.Unstructured throughout, stored as JSON in the storage
// version under /registry/<group>/<plural>/.
type Resource struct {
	// UID is the CRD's: a CRD deleted and created again under the same name
	// is a new resource.
	UID            types.UID
	Group, Plural  string
	StorageVersion string
	Versions       []Version
	// Established resources are listed in discovery and OpenAPI; the others
	// are served (their names are accepted) but not advertised yet.
	Established bool
	// Terminating resources refuse creates (their CRD is being deleted).
	Terminating bool
	// PreserveUnknownFields makes the field manager accept fields the
	// schemas do not declare.
	PreserveUnknownFields bool
	// Convert converts objects to another version of the group (webhook
	// conversion). Nil means conversion strategy None: only apiVersion
	// changes.
	Convert func(ctx context.Context, objs []*unstructured.Unstructured, toVersion string) ([]*unstructured.Unstructured, error)
}

// Version is one version of a Resource.
type Version struct {
	// Resource names the version for routing and discovery (Kind carries the
	// version) and holds its Strategy, whose functions get
	// *unstructured.Unstructured objects. Subresources may be "status" and
	// "scale".
	Resource registry.Resource
	ListKind string
	// Served versions have routes; the storage version may be unserved.
	Served bool
	// Coerce normalises a decoded object the way decoding into a Go type
	// would: it prunes fields the schema does not declare and checks
	// metadata. Nil: nothing.
	Coerce func(u *unstructured.Unstructured, opts CoerceOptions) (unknownFields []string, err error)
	// Scale says where the scale subresource's numbers are.
	Scale *ScalePaths
	// Schema is the version's OpenAPI v3 schema (nil: any fields); it is
	// published and drives server-side apply.
	Schema *spec.Schema
	// SchemaV2 is the kind's whole Swagger 2.0 definition, published in
	// /openapi/v2 (nil: any fields).
	SchemaV2 *spec.Schema
	// Warning is sent with every request of a deprecated version.
	Warning string
}

// CoerceOptions say how Version.Coerce treats an object.
type CoerceOptions struct {
	// FromStorage: the object was read back from storage; malformed
	// metadata is dropped rather than refused.
	FromStorage bool
	// ReportUnknown: return the paths of the unknown fields pruned (for
	// fieldValidation Warn and Strict).
	ReportUnknown bool
}

// ScalePaths are the JSON paths (".spec.replicas") of a custom resource's
// scale subresource.
type ScalePaths struct {
	SpecReplicas, StatusReplicas, LabelSelector string
}

// Served is what the store of one served version of a Resource knows
// besides a built-in resource's.
type Served struct {
	Def *Resource
	Ver *Version
	// TypeConverter is shared by the versions of one resource, built on
	// the first write that needs it.
	TypeConverter func() managedfields.TypeConverter
}

// groupResource names the resource in errors.
func (s *Served) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: s.Ver.Resource.Kind.Group, Resource: s.Ver.Resource.Plural}
}

// SortByVersionPriority orders the versions of each custom group as
// upstream's discovery does: the preferred (highest priority) version first.
func SortByVersionPriority(rs []registry.Resource) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i].Kind, rs[j].Kind
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return utilversion.CompareKubeAwareVersionStrings(a.Version, b.Version) > 0
		}
		return rs[i].Plural < rs[j].Plural
	})
}
