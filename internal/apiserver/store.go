package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/apiserver/custom"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/cache"
)

// resourceStore keeps the objects of one resource: it maps names to storage
// keys, encodes objects for storage (JSON, without resourceVersion, which is
// the storage revision) and decodes them back.
type resourceStore struct {
	res               *registry.Resource
	gvr               schema.GroupVersionResource
	gr                schema.GroupResource
	listGVK           schema.GroupVersionKind
	prefix            string // "/registry/<resource>/" for core, "/registry/<group>/<resource>/" otherwise
	store             storage.Interface
	cache             *cache.Cache
	codecs            *codecs
	objType, listType reflect.Type
	hasStatus         bool
	managers          fieldManagers
	decoded           sync.Map // key → *decodedObject
	// written: key → revision of this server's last write of it, until
	// the watch cache has caught up with that write (see getForUpdate).
	written sync.Map
	// cr is set for custom resources, whose objects are unstructured.
	cr *custom.Served
}

func newResourceStore(res *registry.Resource, st storage.Interface, c *codecs) (*resourceStore, error) {
	gv := res.Kind.GroupVersion()
	obj, err := c.scheme.New(res.Kind)
	if err != nil {
		return nil, fmt.Errorf("resource %s: %w", res.Plural, err)
	}
	listGVK := gv.WithKind(res.Kind.Kind + "List")
	list, err := c.scheme.New(listGVK)
	if err != nil {
		return nil, fmt.Errorf("resource %s list: %w", res.Plural, err)
	}
	prefix := StoragePrefix(*res)
	s := &resourceStore{
		res: res, gvr: gv.WithResource(res.Plural), gr: gv.WithResource(res.Plural).GroupResource(), listGVK: listGVK,
		prefix: prefix, store: st, codecs: c,
		objType: reflect.TypeOf(obj).Elem(), listType: reflect.TypeOf(list).Elem(),
	}
	for _, sub := range res.Subresources {
		if sub == "status" {
			s.hasStatus = true
		}
	}
	s.cache = cache.New(st, prefix, cache.Options{})
	return s, nil
}

// key is the storage key of one object; keyPrefix that of a namespace's
// objects (or of all objects when ns is empty).
func (s *resourceStore) key(ns, name string) string {
	if s.res.Namespaced {
		return s.prefix + ns + "/" + name
	}
	return s.prefix + name
}

func (s *resourceStore) keyPrefix(ns string) string {
	if s.res.Namespaced && ns != "" {
		return s.prefix + ns + "/"
	}
	return s.prefix
}

func (s *resourceStore) newObject() runtime.Object {
	if s.cr != nil {
		u := &unstructured.Unstructured{Object: map[string]interface{}{}}
		u.SetGroupVersionKind(s.res.Kind)
		return u
	}
	return reflect.New(s.objType).Interface().(runtime.Object)
}

func (s *resourceStore) newList() runtime.Object {
	if s.cr != nil {
		l := &unstructured.UnstructuredList{Object: map[string]interface{}{}}
		l.SetGroupVersionKind(s.listGVK)
		return l
	}
	l := reflect.New(s.listType).Interface().(runtime.Object)
	l.GetObjectKind().SetGroupVersionKind(s.listGVK)
	return l
}

// decodedObject is a decoded stored value, shared by every reader.
type decodedObject struct {
	rev int64
	obj runtime.Object
}

// decode returns the object stored under key at revision rev (its
// ModRevision). Decoded objects are kept and shared: callers must treat the
// result as read-only and DeepCopy it before changing it.
func (s *resourceStore) decode(key string, value []byte, rev int64) (runtime.Object, error) {
	if e, ok := s.decoded.Load(key); ok && e.(*decodedObject).rev == rev {
		return e.(*decodedObject).obj, nil
	}
	obj, err := s.decodeObject(value, rev)
	if err != nil {
		return nil, err
	}
	s.decoded.Store(key, &decodedObject{rev: rev, obj: obj})
	return obj, nil
}

// forget drops the decoded object of a deleted key.
func (s *resourceStore) forget(key string) { s.decoded.Delete(key) }

// sweepDecoded drops decoded objects whose keys are no longer stored, and
// the record of writes the watch cache has caught up with.
func (s *resourceStore) sweepDecoded(ctx context.Context) {
	items, _ := s.cache.List(ctx, s.prefix)
	live := make(map[string]bool, len(items))
	for _, kv := range items {
		live[kv.Key] = true
	}
	s.decoded.Range(func(k, _ interface{}) bool {
		if !live[k.(string)] {
			s.decoded.Delete(k)
		}
		return true
	})
	// Writes the cache has caught up with, or of keys since deleted.
	rev := s.cache.Revision()
	s.written.Range(func(k, w interface{}) bool {
		if w.(int64) <= rev {
			s.written.CompareAndDelete(k, w)
		}
		return true
	})
}

// decodeObject turns a stored value into a new typed object with its
// resourceVersion set to rev.
func (s *resourceStore) decodeObject(value []byte, rev int64) (runtime.Object, error) {
	if s.cr != nil {
		return s.cr.Decode(value, rev)
	}
	var obj runtime.Object
	if sa := s.res.StoredAs; sa != nil {
		stored, err := s.codecs.scheme.New(sa.Kind)
		if err != nil {
			return nil, err
		}
		if _, _, err := s.codecs.json.Decode(value, &sa.Kind, stored); err != nil {
			return nil, fmt.Errorf("decoding stored %s: %w", s.gr, err)
		}
		obj = sa.FromStorage(stored)
	} else {
		obj = s.newObject()
		if _, _, err := s.codecs.json.Decode(value, &s.res.Kind, obj); err != nil {
			return nil, fmt.Errorf("decoding stored %s: %w", s.gr, err)
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(s.res.Kind)
	if rev > 0 {
		acc, _ := meta.Accessor(obj)
		acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	}
	return obj, nil
}

// encode produces the stored form of obj: JSON without resourceVersion.
func (s *resourceStore) encode(obj runtime.Object) ([]byte, error) {
	if s.cr != nil {
		return s.cr.Encode(obj)
	}
	if sa := s.res.StoredAs; sa != nil {
		obj = sa.ToStorage(obj)
		var buf bytes.Buffer
		obj.GetObjectKind().SetGroupVersionKind(sa.Kind)
		metaOf(obj).SetResourceVersion("")
		if err := s.codecs.json.Encode(obj, &buf); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := acc.GetResourceVersion()
	acc.SetResourceVersion("")
	defer acc.SetResourceVersion(rv)
	obj.GetObjectKind().SetGroupVersionKind(s.res.Kind)
	var buf bytes.Buffer
	if err := s.codecs.json.Encode(obj, &buf); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// get reads one object from storage (a consistent read). The object is
// shared (see decode); kv holds its stored bytes and revision.
func (s *resourceStore) get(ctx context.Context, ns, name string) (runtime.Object, storage.KeyValue, error) {
	kv, err := s.store.Get(ctx, s.key(ns, name))
	if err != nil {
		return nil, kv, storageError(err, s.gr, name)
	}
	obj, err := s.decode(kv.Key, kv.Value, kv.ModRevision)
	return obj, kv, err
}

// getForUpdate reads one object for an update: from the watch cache when
// cached is set and the cache holds it (the copy may be stale), else from
// storage. fresh says which. A cached copy older than this server's own
// last write of the key is not used: a client that writes an object twice
// in a row (a controller's update then status update) would otherwise
// find its second write based on the copy before its first.
func (s *resourceStore) getForUpdate(ctx context.Context, ns, name string, cached bool) (_ runtime.Object, _ storage.KeyValue, fresh bool, _ error) {
	if cached {
		key := s.key(ns, name)
		if kv, ok := s.cache.Get(key); ok && !s.writtenSince(key, kv.ModRevision) {
			obj, err := s.decode(kv.Key, kv.Value, kv.ModRevision)
			return obj, kv, false, err
		}
	}
	obj, kv, err := s.get(ctx, ns, name)
	return obj, kv, true, err
}

// wrote records that this server wrote key at revision rev.
func (s *resourceStore) wrote(key string, rev int64) { s.written.Store(key, rev) }

// writtenSince reports whether this server wrote key after revision rev;
// once the cache has caught up with the write, it forgets it.
func (s *resourceStore) writtenSince(key string, rev int64) bool {
	w, ok := s.written.Load(key)
	if !ok {
		return false
	}
	if w.(int64) > rev {
		return true
	}
	s.written.CompareAndDelete(key, w)
	return false
}

// metaOf returns obj's ObjectMeta accessor; every served type has one.
func metaOf(obj runtime.Object) metav1.Object {
	acc, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("%T has no ObjectMeta: %v", obj, err))
	}
	return acc
}

// StoragePrefix is the storage key prefix of res's objects:
// "/registry/<plural>/" for the core group, "/registry/<group>/<plural>/"
// otherwise (a resource stored as another's, the other's).
func StoragePrefix(res registry.Resource) string {
	plural, group := res.Plural, res.Kind.Group
	if sa := res.StoredAs; sa != nil {
		plural, group = sa.Plural, sa.Kind.Group
	}
	if group == "" {
		return "/registry/" + plural + "/"
	}
	return "/registry/" + group + "/" + plural + "/"
}
