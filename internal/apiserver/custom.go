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
	"k8s.io/kube-openapi/pkg/validation/spec"

	"plainkube.dev/plainkube/internal/apiserver/custom"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/storage/cache"
)

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
	SetCustomResourceSchemas(v3, v2 map[schema.GroupVersionKind]*spec.Schema)
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
// The same *custom.Resource given again keeps its stores (and their decoded
// objects and field managers); a new one replaces them.
func (s *Server) SetCustomResources(crs []*custom.Resource) {
	s.customMu.Lock()
	defer s.customMu.Unlock()
	next := &customState{stores: map[schema.GroupVersionResource]*resourceStore{}}
	keep := map[string]bool{}
	var advertised []registry.Resource
	var sig []string
	schemas, schemasV2 := map[schema.GroupVersionKind]*spec.Schema{}, map[schema.GroupVersionKind]*spec.Schema{}
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
		tc := sync.OnceValue(func() managedfields.TypeConverter { return custom.TypeConverter(def, s.objectMetaSchemas(), s.log) })
		for j := range def.Versions {
			v := &def.Versions[j]
			gvr := v.Resource.Kind.GroupVersion().WithResource(v.Resource.Plural)
			if _, builtin := s.stores[gvr]; builtin || !v.Served {
				continue
			}
			if old, ok := prev.lookup(gvr); ok && old.cr.Def == def && old.cache == sc.cache {
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
				if v.SchemaV2 != nil {
					schemasV2[v.Resource.Kind] = v.SchemaV2
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
	// (a changed CRD comes as a new *custom.Resource).
	sort.Strings(sig)
	key := strings.Join(sig, ",")
	if s.crAdvertisedSet && key == s.crAdvertised {
		return
	}
	s.crAdvertised, s.crAdvertisedSet = key, true
	custom.SortByVersionPriority(advertised)
	all := append(append([]registry.Resource(nil), s.cfg.Resources...), advertised...)
	s.setDiscoveryResources(all)
	if pub, ok := s.cfg.OpenAPI.(openAPIPublisher); ok {
		pub.SetCustomResourceSchemas(schemas, schemasV2)
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
func newCustomStore(s *Server, def *custom.Resource, v *custom.Version, prefix string, c *cache.Cache, tc func() managedfields.TypeConverter) *resourceStore {
	res := v.Resource
	gvr := res.Kind.GroupVersion().WithResource(res.Plural)
	rs := &resourceStore{
		res: &res, gvr: gvr, gr: gvr.GroupResource(),
		listGVK: res.Kind.GroupVersion().WithKind(v.ListKind),
		prefix:  prefix, store: s.metrics.meter(s.cfg.Storage, gvr.GroupResource()), cache: c, codecs: s.codecs,
		cr: &custom.Served{Def: def, Ver: v, TypeConverter: tc},
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

// ---- request handling specific to custom resources ----

// customPatchTypes are the patch types custom resources accept: no
// strategic merge patch, as upstream.
var customPatchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}

func unsupportedPatchType(accepted []string) error {
	return registry.NewStatusError(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
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
	if rs.cr.Ver.Coerce != nil {
		var err error
		unknown, err = rs.cr.Ver.Coerce(u, custom.CoerceOptions{ReportUnknown: fv != validationIgnore})
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

// objectMetaSchemas returns the OpenAPI definitions of ObjectMeta and
// everything it refers to, read from the OpenAPI builder the first time
// they are needed; nil without one.
func (s *Server) objectMetaSchemas() map[string]*spec.Schema {
	s.crMeta.mu.Lock()
	defer s.crMeta.mu.Unlock()
	if s.crMeta.schemas != nil {
		return s.crMeta.schemas
	}
	pub, ok := s.cfg.OpenAPI.(openAPIPublisher)
	if !ok {
		return nil
	}
	all, err := pub.V3Schemas()
	if err != nil {
		// Tried again on the next custom resource's first write.
		s.log.Warn("custom resources: no OpenAPI schemas for server-side apply", "err", err)
		return nil
	}
	s.crMeta.schemas = custom.ObjectMetaSchemas(all)
	return s.crMeta.schemas
}
