package apiserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/apiserver/custom"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/storage"
)

// writeOptions are what a create or update was asked to do besides the object.
type writeOptions struct {
	dryRun bool
	// manager is the field manager recorded in managedFields.
	manager string
	// applied: the object came from a server-side apply, which has already
	// recorded its managed fields.
	applied bool
	// admitted: the caller admits the write itself (a /scale write, whose
	// admission sees the Scale), or it is a subresource handler's own
	// change of the object after admitting its request (pods/binding).
	admitted bool
}

// managerSubresource is the subresource whose field manager tracks a write.
func managerSubresource(sub string) string {
	if sub == "status" {
		return "status"
	}
	return ""
}

// request is one resource request being served.
type request struct {
	w    http.ResponseWriter
	r    *http.Request
	info requestInfo
	rs   *resourceStore
	out  negotiated
}

func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info requestInfo) {
	gvr := schemaGVR(info)
	if res, ok := s.ephemeral[gvr]; ok && res.CreateAs != nil {
		var err error
		if r, info, err = s.createAs(r, info, res); err != nil {
			s.codecs.writeError(w, r, err)
			return
		}
		gvr = schemaGVR(info)
	}
	if res, ok := s.ephemeral[gvr]; ok {
		if res.Deprecated != "" {
			addWarnings(w, []string{res.Deprecated})
		}
		if err := s.serveHandler(*res.Handler, &request{w: w, r: r, info: info}); err != nil {
			s.codecs.writeError(w, r, err)
		}
		return
	}
	rs, ok := s.lookupStore(gvr)
	if !ok {
		s.codecs.writeError(w, r, apierrors.NewNotFound(gvr.GroupResource(), ""))
		return
	}
	if rs.res.Namespaced != (info.Namespace != "") && !(rs.res.Namespaced && info.Name == "" && (info.Verb == "list" || info.Verb == "watch")) {
		s.codecs.writeError(w, r, apierrors.NewNotFound(gvr.GroupResource(), info.Name))
		return
	}
	out, err := s.codecs.negotiateFor(r, tableable(info), rs.cr != nil)
	if err != nil && s.streaming[info.Subresource] {
		err = nil // proxied: the backend's answer is not ours to negotiate
	}
	if err != nil {
		s.codecs.writeError(w, r, err)
		return
	}
	if rs.cr != nil && rs.cr.Ver.Warning != "" {
		addWarnings(w, []string{rs.cr.Ver.Warning})
	}
	if rs.res.Deprecated != "" {
		addWarnings(w, []string{rs.res.Deprecated})
	}
	if info.Subresource != "" || (info.Verb != "get" && info.Verb != "list" && info.Verb != "watch") {
		r = withWarningSink(r, w)
	}
	rq := &request{w: w, r: r, info: info, rs: rs, out: out}
	if info.Subresource != "" {
		err = s.serveSubresource(rq)
	} else {
		err = s.serveMain(rq)
	}
	if err != nil {
		s.codecs.writeError(w, r, err)
	}
}

// createAs turns a create of a CreateAs resource into the create of the
// subresource it stands for, of the object its body names.
func (s *Server) createAs(r *http.Request, info requestInfo, res *registry.Resource) (*http.Request, requestInfo, error) {
	if info.Verb != "create" || info.Name != "" {
		return r, info, methodNotAllowed(r.Method, schemaGVR(info).GroupResource())
	}
	data, err := s.readBody(r)
	if err != nil {
		return r, info, err
	}
	obj, _, err := s.decodeBody(r, data, res.Kind, nil, validationIgnore)
	if err != nil {
		return r, info, err
	}
	name := metaOf(obj).GetName()
	if name == "" {
		return r, info, apierrors.NewBadRequest("name is required")
	}
	info.Resource, info.Name, info.Subresource = res.CreateAs.Resource, name, res.CreateAs.Subresource
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(data))
	return r, info, nil
}

func (s *Server) serveMain(rq *request) error {
	if v := rq.rs.res.Verbs; v != nil && !slices.Contains(v, rq.info.Verb) {
		return methodNotAllowed(rq.r.Method, rq.rs.gr)
	}
	switch rq.info.Verb {
	case "get":
		return s.handleGet(rq)
	case "list":
		return s.handleList(rq)
	case "watch":
		return s.handleWatch(rq)
	case "create":
		if rq.info.Name != "" {
			return methodNotAllowed(rq.r.Method, rq.rs.gr)
		}
		return s.handleCreate(rq)
	case "update":
		return s.handleUpdate(rq, "")
	case "patch":
		return s.handlePatch(rq, "")
	case "delete":
		return s.handleDelete(rq)
	case "deletecollection":
		return s.handleDeleteCollection(rq)
	}
	return methodNotAllowed(rq.r.Method, rq.rs.gr)
}

func (s *Server) handleGet(rq *request) error {
	obj, _, err := rq.rs.get(rq.r.Context(), rq.info.Namespace, rq.info.Name)
	if err != nil {
		return err
	}
	s.writeResult(rq, http.StatusOK, obj)
	return nil
}

// tableable says whether a request may ask for a Table or metadata only:
// reads of a resource, and gets of the subresources `kubectl get
// --subresource` reads (status and resize in the resource's table, scale
// in the Scale's).
func tableable(info requestInfo) bool {
	switch info.Subresource {
	case "":
		return info.Verb == "get" || info.Verb == "list" || info.Verb == "watch"
	case "status", "scale", "resize":
		return info.Verb == "get"
	}
	return false
}

// writeResult writes obj (or list) in the negotiated form: the object itself,
// a Table or PartialObjectMetadata.
func (s *Server) writeResult(rq *request, code int, obj runtime.Object) {
	switch rq.out.kind {
	case outputTable:
		table, err := s.toTable(rq, obj, true)
		if err != nil {
			s.codecs.writeError(rq.w, rq.r, err)
			return
		}
		s.codecs.writeObject(rq.w, rq.out, code, table)
	case outputPartialMetadata:
		s.codecs.writeObject(rq.w, rq.out, code, toPartialMetadata(obj))
	default:
		s.codecs.writeObject(rq.w, rq.out, code, obj)
	}
}

// ---- create ----

// readWrite reads a create or update request: its options and its body,
// decoded and checked for unknown fields as fieldValidation asks.
func (s *Server) readWrite(rq *request) (runtime.Object, writeOptions, error) {
	var opts writeOptions
	dryRun, err := parseDryRun(rq.r.URL.Query()["dryRun"])
	if err != nil {
		return nil, opts, err
	}
	fv, err := parseFieldValidation(rq.r)
	if err != nil {
		return nil, opts, err
	}
	manager, err := fieldManagerName(rq.r, false)
	if err != nil {
		return nil, opts, err
	}
	data, err := s.readBody(rq.r)
	if err != nil {
		return nil, opts, err
	}
	obj, warnings, err := s.decodeObject(rq, data, fv)
	if err != nil {
		return nil, opts, err
	}
	addWarnings(rq.w, warnings)
	return obj, writeOptions{dryRun: dryRun, manager: manager}, nil
}

func (s *Server) handleCreate(rq *request) error {
	obj, opts, err := s.readWrite(rq)
	if err != nil {
		return err
	}
	created, err := s.createObject(rq.r.Context(), rq.rs, rq.info.Namespace, obj, opts)
	if err != nil {
		return err
	}
	s.writeResult(rq, http.StatusCreated, created)
	return nil
}

// createObject defaults, validates and stores a new object; it is the one
// path every create takes.
func (s *Server) createObject(ctx context.Context, rs *resourceStore, ns string, obj runtime.Object, opts writeOptions) (runtime.Object, error) {
	m := metaOf(obj)
	if rs.res.Namespaced {
		if m.GetNamespace() == "" {
			m.SetNamespace(ns)
		} else if m.GetNamespace() != ns {
			return nil, badRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else {
		m.SetNamespace("")
	}
	if rs.cr != nil && rs.cr.Def.Terminating {
		return nil, errCreateWhileTerminating(rs, m.GetName())
	}
	st := rs.res.Strategy
	if st.Default != nil {
		st.Default(obj)
	}
	attrs := admissionAttributes(ctx, rs, admission.Create, "", m.GetNamespace(), m.GetName(), obj, nil, createOptions(opts), opts.dryRun)
	if err := s.mutate(ctx, attrs); err != nil {
		return nil, err
	}
	if attrs.Object != obj {
		obj, m = attrs.Object, metaOf(attrs.Object)
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(s.now().UTC().Truncate(timeSecond)))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	if rs.res.TracksGeneration {
		m.SetGeneration(1)
	} else {
		m.SetGeneration(0)
	}
	if st.PrepareForCreate != nil {
		st.PrepareForCreate(ctx, obj)
	}
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	if generated {
		m.SetName(generateName(m.GetGenerateName()))
	}
	if errs := s.validateCreate(rs, obj); len(errs) > 0 {
		return nil, apierrors.NewInvalid(rs.res.Kind.GroupKind(), m.GetName(), errs)
	}
	if w := st.Warnings; w != nil {
		warn(ctx, w(obj, nil))
	}
	if err := s.validate(ctx, attrs); err != nil {
		return nil, err
	}
	if !opts.applied {
		obj = rs.trackManagedFields(rs.newObject(), obj, opts.manager, "")
		m = metaOf(obj)
	}
	if opts.dryRun {
		// As upstream's dry-run storage: a name taken is refused, a
		// resourceVersion set is not (only a real create checks it).
		if _, err := rs.store.Get(ctx, rs.key(m.GetNamespace(), m.GetName())); err == nil {
			return nil, storageError(storage.ErrKeyExists, rs.gr, m.GetName())
		}
		return rs.asStored(obj), nil
	}
	if m.GetResourceVersion() != "" {
		return nil, badRequest("resourceVersion should not be set on objects to be created")
	}
	undo, err := s.cfg.Admission.BeforeCreate(ctx, rs.gr, obj)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		data, err := rs.encode(obj)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		rev, err := rs.store.Create(ctx, rs.key(m.GetNamespace(), m.GetName()), data)
		if errors.Is(err, storage.ErrKeyExists) && generated && attempt < 8 {
			m.SetName(generateName(m.GetGenerateName()))
			continue
		}
		if err != nil {
			undo()
			return nil, storageError(err, rs.gr, m.GetName())
		}
		rs.wrote(rs.key(m.GetNamespace(), m.GetName()), rev)
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		return rs.asStored(obj), nil
	}
}

// asStored is obj as a read returns it: for a resource stored as another
// kind, converted to it and back, so that a write is answered with what
// was stored (what the conversion sets shows: an autoscaling/v1 HPA's
// default CPU target), as upstream answers with the object it stored.
func (rs *resourceStore) asStored(obj runtime.Object) runtime.Object {
	sa := rs.res.StoredAs
	if sa == nil {
		return obj
	}
	out := sa.FromStorage(sa.ToStorage(obj))
	out.GetObjectKind().SetGroupVersionKind(rs.res.Kind)
	return out
}

func (s *Server) validateCreate(rs *resourceStore, obj runtime.Object) field.ErrorList {
	errs := s.validateMeta(rs, obj)
	if rs.res.Strategy.Validate != nil {
		errs = append(errs, rs.res.Strategy.Validate(obj)...)
	}
	return dedupe(errs)
}

func (s *Server) validateMeta(rs *resourceStore, obj runtime.Object) field.ErrorList {
	nameFn := apivalidation.NameIsDNSSubdomain
	if rs.res.Strategy.ValidateName != nil {
		nameFn = rs.res.Strategy.ValidateName
	}
	return apivalidation.ValidateObjectMetaAccessor(metaOf(obj), rs.res.Namespaced, nameFn, field.NewPath("metadata"))
}

// dedupe drops repeated errors: a strategy that validates ObjectMeta
// itself (as upstream's CRD validation does) repeats the generic checks.
func dedupe(errs field.ErrorList) field.ErrorList {
	if len(errs) < 2 {
		return errs
	}
	seen := map[string]bool{}
	out := errs[:0:0]
	for _, e := range errs {
		if k := e.Error(); !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

// generateName appends five random characters from upstream's alphabet to
// base, cut so the result is at most 63 characters.
func generateName(base string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	const maxBase = 63 - 5
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	b := []byte(base)
	for i := 0; i < 5; i++ {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b = append(b, alphabet[n.Int64()])
	}
	return string(b)
}

// ---- update ----

func (s *Server) handleUpdate(rq *request, subresource string) error {
	ctx := rq.r.Context()
	obj, opts, err := s.readWrite(rq)
	if err != nil {
		return err
	}
	m := metaOf(obj)
	if m.GetName() != rq.info.Name {
		return badRequest("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), rq.info.Name)
	}
	if rq.rs.res.Namespaced && m.GetNamespace() != "" && m.GetNamespace() != rq.info.Namespace {
		return badRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	updated, err := s.updateObject(ctx, rq.rs, rq.info.Namespace, rq.info.Name, subresource, opts,
		func(current runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil })
	if err != nil {
		return err
	}
	s.writeResult(rq, http.StatusOK, updated)
	return nil
}

// updateObject is the one path every update takes (PUT, PATCH, subresources,
// finalizer changes): it reads the stored object, asks mutate for the new
// one, applies the resource's rules and writes it back with compare-and-swap
// on the revision read. When the new object carries no resourceVersion, a
// conflict with a concurrent writer is retried with a fresh read; when it
// carries a stale one the client gets 409.
//
// The first attempt starts from the watch cache's copy, as upstream's
// GuaranteedUpdate starts from its cached suggestion, and reads nothing from
// storage. A write is compare-and-swap, so a stale copy costs at most a
// conflict; every other answer it could make wrong (an error, a no-op) is
// made again on a fresh read. A dry run, which writes nothing, reads storage.
func (s *Server) updateObject(ctx context.Context, rs *resourceStore, ns, name, subresource string, opts writeOptions,
	mutate func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, apierrors.NewTimeoutError("request cancelled", 1)
		}
		current, kv, fresh, err := rs.getForUpdate(ctx, ns, name, attempt == 0 && !opts.dryRun)
		if err != nil {
			return nil, err
		}
		// again: an answer from a copy that may be stale is made again
		// on a fresh read.
		again := !fresh
		rev := kv.ModRevision
		obj, err := mutate(current.DeepCopyObject())
		if err != nil {
			if again {
				continue
			}
			return nil, err
		}
		m := metaOf(obj)
		clientRV := m.GetResourceVersion()
		if clientRV != "" && clientRV != strconv.FormatInt(rev, 10) {
			if again {
				continue
			}
			return nil, apierrors.NewConflict(rs.gr, name, errors.New(errModified))
		}
		if uid := m.GetUID(); uid != "" && uid != metaOf(current).GetUID() {
			if again {
				continue
			}
			return nil, apierrors.NewConflict(rs.gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", metaOf(current).GetUID(), uid))
		}
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		obj, undo, err := s.prepareUpdate(ctx, rs, obj, current, subresource, opts)
		if err != nil {
			if again {
				continue
			}
			return nil, err
		}
		m = metaOf(obj)
		if !opts.applied {
			obj = rs.trackManagedFields(current, obj, opts.manager, managerSubresource(subresource))
			m = metaOf(obj)
		}
		data, err := rs.encode(obj)
		if err != nil {
			undo()
			return nil, apierrors.NewInternalError(err)
		}
		if string(data) == string(kv.Value) && !kv.Stale {
			undo()
			if again {
				continue
			}
			return current, nil // no-op: nothing written, resourceVersion unchanged
		}
		if opts.dryRun {
			m.SetResourceVersion(strconv.FormatInt(rev, 10))
			return rs.asStored(obj), nil
		}
		if rs.deletionComplete(obj, current) {
			// The last finalizer is gone: the object's deletion completes.
			if _, _, err := rs.store.Delete(ctx, rs.key(ns, name), rev); err != nil {
				undo()
				if errors.Is(err, storage.ErrConflict) && (clientRV == "" || again) {
					continue
				}
				return nil, storageError(err, rs.gr, name)
			}
			rs.forget(kv.Key)
			s.cfg.Admission.AfterUpdate(ctx, rs.gr, obj, current)
			s.cfg.Admission.AfterDelete(ctx, rs.gr, obj)
			m.SetResourceVersion(strconv.FormatInt(rev, 10))
			return obj, nil
		}
		newRev, err := rs.store.Update(ctx, rs.key(ns, name), data, rev)
		if err != nil {
			// What this attempt reserved goes back, a retry included: the
			// next attempt reserves from what it reads.
			undo()
		}
		if errors.Is(err, storage.ErrConflict) && (clientRV == "" || again) && attempt < 100 {
			continue
		}
		if err != nil {
			return nil, storageError(err, rs.gr, name)
		}
		rs.wrote(kv.Key, newRev)
		s.cfg.Admission.AfterUpdate(ctx, rs.gr, obj, current)
		m.SetResourceVersion(strconv.FormatInt(newRev, 10))
		return rs.asStored(obj), nil
	}
}

// prepareUpdate keeps what an update may not change, applies the strategy,
// admits, bumps generation and validates; it returns the object to store
// (a mutating admission plugin may replace it). subresource "" is a
// main-resource update; a writable subresource changes only its part of
// the object (see resourceStore.part); others (pods' "binding") write
// what their handler made of the stored object.
func (s *Server) prepareUpdate(ctx context.Context, rs *resourceStore, obj, old runtime.Object, subresource string, opts writeOptions) (_ runtime.Object, undo func(), err error) {
	st := rs.res.Strategy
	// Every written body is defaulted, a /status one too, as upstream
	// defaults what it decodes (a load balancer ingress IP gets its ipMode).
	if st.Default != nil {
		st.Default(obj)
	}
	var attrs *admission.Attributes
	if !opts.admitted {
		attrs = admissionAttributes(ctx, rs, admission.Update, subresource, metaOf(old).GetNamespace(), metaOf(old).GetName(), obj, old, updateOptions(opts), opts.dryRun)
		if err := s.mutate(ctx, attrs); err != nil {
			return nil, nil, err
		}
		obj = attrs.Object
	}
	m, om := metaOf(obj), metaOf(old)
	if part, ok := rs.part(subresource); ok {
		merge := part.Merge
		if merge == nil {
			merge = statusUpdate
		}
		rv := m.GetResourceVersion()
		setAll(obj, merge(obj, old))
		m.SetResourceVersion(rv)
	}
	m.SetNamespace(om.GetNamespace())
	m.SetUID(om.GetUID())
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	m.SetDeletionTimestamp(om.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	m.SetSelfLink("")
	m.SetGeneration(om.GetGeneration())
	if subresource == "" {
		if rs.hasStatus {
			copyField(obj, old, "Status")
		}
		if st.PrepareForUpdate != nil {
			st.PrepareForUpdate(ctx, obj, old)
		}
	}
	if rs.res.TracksGeneration && !rs.res.Handlers[subresource].KeepsGeneration && rs.specChanged(obj, old) {
		m.SetGeneration(om.GetGeneration() + 1)
	}
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(m, om, field.NewPath("metadata"))
	switch subresource {
	case "":
		if len(errs) == 0 {
			if st.ValidateUpdateOnly {
				errs = append(errs, s.validateMeta(rs, obj)...)
			} else {
				errs = append(errs, s.validateCreate(rs, obj)...)
			}
		}
		if st.ValidateUpdate != nil {
			errs = append(errs, st.ValidateUpdate(obj, old)...)
		}
	case "status":
		if st.ValidateStatusUpdate != nil {
			errs = append(errs, st.ValidateStatusUpdate(obj, old)...)
		}
	default:
		if part, ok := rs.part(subresource); ok && part.Validate != nil {
			errs = append(errs, part.Validate(obj, old)...)
		}
	}
	if len(errs) > 0 {
		return nil, nil, apierrors.NewInvalid(rs.res.Kind.GroupKind(), m.GetName(), dedupe(errs))
	}
	if w := st.Warnings; w != nil && (subresource == "" || subresource == "status") {
		warn(ctx, w(obj, old))
	}
	if attrs != nil {
		attrs.Object = obj
		if err := s.validate(ctx, attrs); err != nil {
			return nil, nil, err
		}
	}
	if opts.dryRun {
		return obj, func() {}, nil // the storage hooks reserve nothing for a dry run
	}
	if undo, err = s.cfg.Admission.BeforeUpdate(ctx, rs.gr, obj, old); err != nil {
		return nil, nil, err
	}
	return obj, undo, nil
}

func (rs *resourceStore) specChanged(obj, old runtime.Object) bool {
	if rs.cr != nil {
		return custom.SpecChanged(obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured), rs.hasStatus)
	}
	return specChanged(obj, old)
}

// bumpGeneration counts the start of a deletion as a change of the
// object's desired state, as upstream does for objects with a generation:
// their controllers must stop acting on them.
func bumpGeneration(m metav1.Object) {
	if g := m.GetGeneration(); g > 0 {
		m.SetGeneration(g + 1)
	}
}

// deletionComplete reports whether an update finishes a deletion: the
// object was only waiting for its finalizers (grace period 0) and the
// update removed the last one. A pod in graceful termination (grace > 0)
// stays until its kubelet deletes it, whatever updates it gets meanwhile.
func (rs *resourceStore) deletionComplete(obj, old runtime.Object) bool {
	om := metaOf(old)
	grace := om.GetDeletionGracePeriodSeconds()
	return om.GetDeletionTimestamp() != nil && grace != nil && *grace == 0 && !rs.hasPendingFinalizers(obj)
}

// hasPendingFinalizers reports whether obj still waits for a finalizer:
// metadata.finalizers, or the resource's own (a namespace's
// spec.finalizers).
func (rs *resourceStore) hasPendingFinalizers(obj runtime.Object) bool {
	if len(metaOf(obj).GetFinalizers()) > 0 {
		return true
	}
	own := rs.res.Strategy.OwnFinalizers
	return own != nil && own(obj)
}

// ---- delete ----

// gracePeriod is the resource's Strategy.GracePeriod, if it has one.
func (rs *resourceStore) gracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) (int64, bool) {
	if rs.res.Strategy.GracePeriod == nil {
		return 0, false
	}
	return rs.res.Strategy.GracePeriod(obj, opts)
}

func (s *Server) handleDelete(rq *request) error {
	ctx := rq.r.Context()
	opts, err := s.decodeDeleteOptions(rq.r)
	if err != nil {
		return err
	}
	obj, deleted, err := s.deleteObject(ctx, rq.rs, rq.info.Namespace, rq.info.Name, opts, true)
	if err != nil {
		return err
	}
	if !deleted {
		code := http.StatusOK
		if opts.OrphanDependents != nil && !*opts.OrphanDependents {
			code = http.StatusAccepted
		}
		s.writeResult(rq, code, obj)
		return nil
	}
	if rq.rs.res != nil && rq.rs.res.ReturnDeletedObject {
		s.writeResult(rq, http.StatusOK, obj)
		return nil
	}
	m := metaOf(obj)
	s.codecs.writeObject(rq.w, rq.out, http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: m.GetName(), Group: rq.rs.gr.Group, Kind: rq.rs.gr.Resource, UID: m.GetUID()},
	})
	return nil
}

// deleteObject is the one path every delete takes. It reports deleted=false
// when the object stays, marked with deletionTimestamp, for finalizers or a
// pod's graceful termination. admit: the delete is admitted (not when a
// subresource handler deletes after admitting its own request, as
// pods/eviction does).
func (s *Server) deleteObject(ctx context.Context, rs *resourceStore, ns, name string, opts *metav1.DeleteOptions, admit bool) (runtime.Object, bool, error) {
	dryRun, err := parseDryRun(opts.DryRun)
	if err != nil {
		return nil, false, err
	}
	policy, err := propagationPolicy(opts)
	if err != nil {
		return nil, false, err
	}
	for attempt := 0; ; attempt++ {
		current, kv, err := rs.get(ctx, ns, name)
		if err != nil {
			return nil, false, err
		}
		rev := kv.ModRevision
		m := metaOf(current)
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != m.GetUID() {
				return nil, false, apierrors.NewConflict(rs.gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
				return nil, false, apierrors.NewConflict(rs.gr, name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
			}
		}
		if admit {
			if err := s.admit(ctx, admissionAttributes(ctx, rs, admission.Delete, "", ns, name, nil, current, opts, dryRun)); err != nil {
				return nil, false, err
			}
		}
		obj := current.DeepCopyObject()
		om := metaOf(obj)
		changed := applyPropagation(om, policy)
		now := metav1.NewTime(s.now().UTC().Truncate(timeSecond))
		if grace, ok := rs.gracePeriod(obj, opts); ok {
			// A pod on a node: its kubelet stops it, then deletes it for good.
			if om.GetDeletionGracePeriodSeconds() == nil || *om.GetDeletionGracePeriodSeconds() > grace {
				if om.GetDeletionTimestamp() == nil {
					bumpGeneration(om)
				}
				at := metav1.NewTime(now.Add(secondsDuration(grace)))
				om.SetDeletionTimestamp(&at)
				om.SetDeletionGracePeriodSeconds(&grace)
				changed = true
			}
		} else if rs.hasPendingFinalizers(obj) {
			zero := int64(0)
			if om.GetDeletionTimestamp() == nil {
				bumpGeneration(om)
				om.SetDeletionTimestamp(&now)
				om.SetDeletionGracePeriodSeconds(&zero)
				if prepare := rs.res.Strategy.PrepareForDelete; prepare != nil {
					prepare(obj)
				}
				changed = true
			} else if g := om.GetDeletionGracePeriodSeconds(); g == nil || *g != 0 {
				// A delete after graceful termination (the kubelet's
				// last one) leaves only the finalizers to wait for.
				om.SetDeletionGracePeriodSeconds(&zero)
				changed = true
			}
		} else {
			if dryRun {
				return current, true, nil
			}
			if _, _, err := rs.store.Delete(ctx, rs.key(ns, name), rev); err != nil {
				if errors.Is(err, storage.ErrConflict) && attempt < 100 {
					continue
				}
				return nil, false, storageError(err, rs.gr, name)
			}
			rs.forget(kv.Key)
			s.cfg.Admission.AfterDelete(ctx, rs.gr, current)
			return current, true, nil
		}
		if !changed || dryRun {
			return obj, false, nil
		}
		data, err := rs.encode(obj)
		if err != nil {
			return nil, false, apierrors.NewInternalError(err)
		}
		newRev, err := rs.store.Update(ctx, rs.key(ns, name), data, rev)
		if errors.Is(err, storage.ErrConflict) && attempt < 100 {
			continue
		}
		if err != nil {
			return nil, false, storageError(err, rs.gr, name)
		}
		rs.wrote(kv.Key, newRev)
		om.SetResourceVersion(strconv.FormatInt(newRev, 10))
		return obj, false, nil
	}
}

func propagationPolicy(opts *metav1.DeleteOptions) (metav1.DeletionPropagation, error) {
	if opts.PropagationPolicy != nil && opts.OrphanDependents != nil {
		return "", apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("DeleteOptions").GroupKind(), "", field.ErrorList{
			field.Invalid(field.NewPath("propagationPolicy"), *opts.PropagationPolicy, "orphanDependents and deletionPropagation cannot be both set")})
	}
	if opts.OrphanDependents != nil {
		if *opts.OrphanDependents {
			return metav1.DeletePropagationOrphan, nil
		}
		return metav1.DeletePropagationBackground, nil
	}
	if opts.PropagationPolicy == nil {
		return "", nil
	}
	switch p := *opts.PropagationPolicy; p {
	case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
		return p, nil
	default:
		return "", apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("DeleteOptions").GroupKind(), "", field.ErrorList{
			field.NotSupported(field.NewPath("propagationPolicy"), p, []string{string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationOrphan), "nil"})})
	}
}

// applyPropagation sets the garbage collector's finalizers for policy:
// "orphan" keeps dependents, "foregroundDeletion" deletes them first.
func applyPropagation(m metav1.Object, policy metav1.DeletionPropagation) bool {
	want := map[string]bool{}
	switch policy {
	case metav1.DeletePropagationOrphan:
		want[metav1.FinalizerOrphanDependents] = true
	case metav1.DeletePropagationForeground:
		want[metav1.FinalizerDeleteDependents] = true
	case "":
		return false
	}
	var out []string
	changed := false
	for _, f := range m.GetFinalizers() {
		if (f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents) && !want[f] {
			changed = true
			continue
		}
		if want[f] {
			delete(want, f)
		}
		out = append(out, f)
	}
	for f := range want {
		out = append(out, f)
		changed = true
	}
	if changed {
		m.SetFinalizers(out)
	}
	return changed
}

// ---- deletecollection ----

func (s *Server) handleDeleteCollection(rq *request) error {
	ctx := rq.r.Context()
	opts, err := s.decodeDeleteOptions(rq.r)
	if err != nil {
		return err
	}
	lo, err := s.parseListOptions(rq)
	if err != nil {
		return err
	}
	items, _, err := s.listMatching(ctx, rq.rs, rq.info.Namespace, lo)
	if err != nil {
		return err
	}
	var deleted []runtime.Object
	for _, obj := range items {
		m := metaOf(obj)
		o := *opts
		uid := m.GetUID()
		o.Preconditions = &metav1.Preconditions{UID: &uid}
		d, _, err := s.deleteObject(ctx, rq.rs, m.GetNamespace(), m.GetName(), &o, true)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // gone or replaced meanwhile
		}
		if err != nil {
			return err
		}
		deleted = append(deleted, d)
	}
	list := rq.rs.newList()
	if err := setListItems(list, deleted); err != nil {
		return apierrors.NewInternalError(err)
	}
	s.codecs.writeObject(rq.w, rq.out, http.StatusOK, list)
	return nil
}
