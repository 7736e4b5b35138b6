package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	utilversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/storage/cache"
)

// CustomResource is one resource taught to the server at run time: every
// version of one CustomResourceDefinition. Package apiextensions builds it
// from the CRD; SetCustomResources serves it. Objects are
// *unstructured.Unstructured throughout, stored as JSON in the storage
// version under /registry/<group>/<plural>/.
type CustomResource struct {
	// UID is the CRD's: a CRD deleted and created again under the same name
	// is a new resource.
	UID            types.UID
	Group, Plural  string
	StorageVersion string
	Versions       []CustomResourceVersion
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

// CustomResourceVersion is one version of a CustomResource.
type CustomResourceVersion struct {
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
	// Warning is sent with every request of a deprecated version.
	Warning string
}

// CoerceOptions say how CustomResourceVersion.Coerce treats an object.
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

// customInfo is what a custom resourceStore knows beyond a built-in one.
type customInfo struct {
	def *CustomResource
	ver *CustomResourceVersion
	// typeConverter is shared by the versions of one resource, built on
	// the first write that needs it.
	typeConverter func() managedfields.TypeConverter
}

// customState is one generation of the served custom resources; it is
// replaced whole by SetCustomResources and read without locks.
type customState struct {
	stores map[schema.GroupVersionResource]*resourceStore
}

// sharedCache is the watch cache of one custom resource, shared by the
// stores of all its versions.
type sharedCache struct {
	uid    types.UID
	cache  *cache.Cache
	cancel context.CancelFunc // nil until the cache runs
}

func (sc *sharedCache) stop() {
	if sc.cancel != nil {
		sc.cancel()
	}
}

// openAPIPublisher is what the server needs of the OpenAPI handler to
// publish custom resources (openapi.Builder).
type openAPIPublisher interface {
	SetResources([]registry.Resource)
	SetCustomResourceSchemas(map[schema.GroupVersionKind]*spec.Schema)
	V3Schemas() (map[string]*spec.Schema, error)
}

// lookupStore finds the store serving gvr: a built-in one, else a custom one.
func (s *Server) lookupStore(gvr schema.GroupVersionResource) (*resourceStore, bool) {
	if rs, ok := s.stores[gvr]; ok {
		return rs, true
	}
	return s.custom.Load().lookup(gvr)
}

// SetCustomResources replaces the set of custom resources the server
// serves: routes for every served version, discovery and OpenAPI. A
// resource whose routes would shadow a built-in one is left out. It is
// called by the CRD controllers (package apiextensions) whenever a CRD
// changes; it may be called before Run.
// The same *CustomResource given again keeps its stores (and their decoded
// objects and field managers); a new one replaces them.
func (s *Server) SetCustomResources(crs []*CustomResource) {
	s.customMu.Lock()
	defer s.customMu.Unlock()
	next := &customState{stores: map[schema.GroupVersionResource]*resourceStore{}}
	keep := map[string]bool{}
	var advertised []registry.Resource
	var sig []string
	schemas := map[schema.GroupVersionKind]*spec.Schema{}
	prev := s.custom.Load()
	for _, def := range crs {
		prefix := "/registry/" + def.Group + "/" + def.Plural + "/"
		if s.builtinPrefix(prefix) {
			s.log.Warn("custom resource would shadow a built-in resource; not served", "group", def.Group, "plural", def.Plural)
			continue
		}
		sc := s.crCaches[prefix]
		if sc != nil && sc.uid != def.UID {
			sc.stop()
			sc = nil
		}
		if sc == nil {
			sc = &sharedCache{uid: def.UID, cache: cache.New(s.cfg.Storage, prefix, cache.Options{Logger: s.log})}
			s.crCaches[prefix] = sc
		}
		keep[prefix] = true
		s.startCacheLocked(sc)
		tc := sync.OnceValue(func() managedfields.TypeConverter { return s.customTypeConverter(def) })
		for j := range def.Versions {
			v := &def.Versions[j]
			gvr := v.Resource.Kind.GroupVersion().WithResource(v.Resource.Plural)
			if _, builtin := s.stores[gvr]; builtin || !v.Served {
				continue
			}
			if old, ok := prev.lookup(gvr); ok && old.cr.def == def && old.cache == sc.cache {
				next.stores[gvr] = old
			} else {
				next.stores[gvr] = newCustomStore(s, def, v, prefix, sc.cache, tc)
			}
			if def.Established {
				advertised = append(advertised, v.Resource)
				sig = append(sig, fmt.Sprintf("%s/%p", gvr, v))
				if v.Schema != nil {
					schemas[v.Resource.Kind] = v.Schema
				}
			}
		}
	}
	for prefix, sc := range s.crCaches {
		if !keep[prefix] {
			sc.stop()
			delete(s.crCaches, prefix)
		}
	}
	s.custom.Store(next)
	// Discovery and OpenAPI are rebuilt only when what they show changed
	// (a changed CRD comes as a new *CustomResource).
	sort.Strings(sig)
	key := strings.Join(sig, ",")
	if s.crAdvertisedSet && key == s.crAdvertised {
		return
	}
	s.crAdvertised, s.crAdvertisedSet = key, true
	sortByVersionPriority(advertised)
	all := append(append([]registry.Resource(nil), s.cfg.Resources...), advertised...)
	s.discovery.set(all)
	if pub, ok := s.cfg.OpenAPI.(openAPIPublisher); ok {
		pub.SetCustomResourceSchemas(schemas)
		pub.SetResources(all)
	}
}

func (st *customState) lookup(gvr schema.GroupVersionResource) (*resourceStore, bool) {
	if st == nil {
		return nil, false
	}
	rs, ok := st.stores[gvr]
	return rs, ok
}

// newCustomStore is the store of one served version of a custom resource.
func newCustomStore(s *Server, def *CustomResource, v *CustomResourceVersion, prefix string, c *cache.Cache, tc func() managedfields.TypeConverter) *resourceStore {
	res := v.Resource
	gvr := res.Kind.GroupVersion().WithResource(res.Plural)
	rs := &resourceStore{
		res: &res, gvr: gvr, gr: gvr.GroupResource(),
		listGVK: res.Kind.GroupVersion().WithKind(v.ListKind),
		prefix:  prefix, store: s.cfg.Storage, cache: c, codecs: s.codecs,
		cr: &customInfo{def: def, ver: v, typeConverter: tc},
	}
	for _, sub := range res.Subresources {
		if sub == "status" {
			rs.hasStatus = true
		}
	}
	return rs
}

// builtinPrefix reports whether prefix holds a built-in resource's objects.
func (s *Server) builtinPrefix(prefix string) bool {
	for _, rs := range s.stores {
		if rs.prefix == prefix {
			return true
		}
	}
	return false
}

// startCacheLocked runs sc's cache once the server runs.
func (s *Server) startCacheLocked(sc *sharedCache) {
	if sc.cancel != nil || s.runCtx == nil {
		return
	}
	ctx, cancel := context.WithCancel(s.runCtx)
	sc.cancel = cancel
	go sc.cache.Run(ctx)
}

// startCustomCaches starts the caches of custom resources set before Run.
func (s *Server) startCustomCaches(ctx context.Context) {
	s.customMu.Lock()
	defer s.customMu.Unlock()
	s.runCtx = ctx
	for _, sc := range s.crCaches {
		s.startCacheLocked(sc)
	}
}

// sortByVersionPriority orders the versions of each custom group as
// upstream's discovery does: the preferred (highest priority) version first.
func sortByVersionPriority(rs []registry.Resource) {
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

// ---- request handling specific to custom resources ----

// customPatchTypes are the patch types custom resources accept: no
// strategic merge patch, as upstream.
var customPatchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}

func unsupportedPatchType(accepted []string) error {
	return newStatusError(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
		"the body of the request was in an unknown format - accepted media types include: "+strings.Join(accepted, ", "))
}

// errCreateWhileTerminating is upstream's refusal of a create while the CRD
// is being deleted.
func errCreateWhileTerminating(rs *resourceStore, name string) error {
	return apierrors.NewForbidden(rs.gr, name, errors.New("create not allowed while custom resource definition is terminating"))
}

// coerceCustom prunes and normalises a decoded custom object and turns
// unknown fields into warnings (Warn) or a 400 (Strict), joining the
// decoder's own strict errors (duplicate fields).
func (rs *resourceStore) coerceCustom(u *unstructured.Unstructured, fv fieldValidation, decodeWarnings []string) ([]string, error) {
	var unknown []string
	if rs.cr.ver.Coerce != nil {
		var err error
		unknown, err = rs.cr.ver.Coerce(u, CoerceOptions{ReportUnknown: fv != validationIgnore})
		if err != nil {
			return nil, badRequest("%v", err)
		}
	}
	warnings := decodeWarnings
	for _, f := range unknown {
		warnings = append(warnings, fmt.Sprintf("unknown field %q", f))
	}
	if fv == validationStrict && len(unknown) > 0 {
		return nil, badRequest("strict decoding error: %s", strings.Join(warnings, ", "))
	}
	if fv == validationIgnore {
		return nil, nil
	}
	return warnings, nil
}
