package apiserver

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/registry"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// statusUpdate is what a /status write (and a Part without Merge) may change, as upstream's status
// strategies allow: the status, and metadata other than labels (controllers
// record annotations such as a Deployment's revision this way); the spec
// and labels stay as stored.
func statusUpdate(obj, old runtime.Object) runtime.Object {
	out := old.DeepCopyObject()
	copyField(out, obj, "Status")
	om, nm := metaOf(out), metaOf(obj)
	om.SetAnnotations(nm.GetAnnotations())
	om.SetFinalizers(nm.GetFinalizers())
	om.SetOwnerReferences(nm.GetOwnerReferences())
	return out
}

func (s *Server) serveSubresource(rq *request) error {
	sub := rq.info.Subresource
	if !rq.rs.hasSubresource(sub) || rq.info.Name == "" {
		return apierrors.NewNotFound(rq.rs.gr, rq.info.Name)
	}
	if h, ok := rq.rs.res.Handlers[sub]; ok {
		return s.serveHandler(h, rq)
	}
	if sub == "scale" {
		return s.serveScale(rq)
	}
	part, ok := rq.rs.part(sub)
	if !ok {
		return apierrors.NewNotFound(rq.rs.gr, rq.info.Name)
	}
	switch rq.info.Verb {
	case "get":
		if part.UpdateOnly {
			return methodNotAllowed(rq.r.Method, rq.rs.gr)
		}
		return s.handleGet(rq)
	case "update":
		return s.handleUpdate(rq, sub)
	case "patch":
		if part.UpdateOnly {
			return methodNotAllowed(rq.r.Method, rq.rs.gr)
		}
		return s.handlePatch(rq, sub)
	}
	return methodNotAllowed(rq.r.Method, rq.rs.gr)
}

func (rs *resourceStore) hasSubresource(sub string) bool {
	for _, x := range rs.res.Subresources {
		if x == sub {
			return true
		}
	}
	return false
}

// part is how a write to sub changes the object: "status" as upstream's
// status strategies allow, the others as the resource declares.
func (rs *resourceStore) part(sub string) (registry.Part, bool) {
	if p, ok := rs.res.Parts[sub]; ok {
		return p, true
	}
	if sub == "status" {
		return registry.Part{}, true
	}
	return registry.Part{}, false
}

// ---- scale ----

// scale is how the resource's scale subresource maps onto its objects:
// for a custom resource the paths its CRD names (package custom), for a
// built-in one what its registry.Resource says.
func (rs *resourceStore) scale() (*registry.Scale, error) {
	if rs.cr != nil && rs.cr.Ver.Scale != nil {
		return &registry.Scale{Of: rs.cr.Scale, SetReplicas: rs.cr.SetReplicas}, nil
	}
	if rs.res.Scale == nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("%s declares a scale subresource but no registry.Scale", rs.gr))
	}
	return rs.res.Scale, nil
}

func (s *Server) serveScale(rq *request) error {
	ctx := rq.r.Context()
	rs := rq.rs
	scale, err := rs.scale()
	if err != nil {
		return err
	}
	// A Scale is a typed object whatever its resource: unlike a custom
	// resource's own objects, it has a protobuf form.
	rq.out, _ = s.codecs.negotiate(rq.r, tableable(rq.info))
	if rq.info.Verb == "get" {
		obj, _, err := rs.get(ctx, rq.info.Namespace, rq.info.Name)
		if err != nil {
			return err
		}
		sc, err := scale.Of(obj)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		s.writeResult(rq, http.StatusOK, sc)
		return nil
	}
	if rq.info.Verb != "update" && rq.info.Verb != "patch" {
		return methodNotAllowed(rq.r.Method, rs.gr)
	}
	dryRun, err := parseDryRun(rq.r.URL.Query()["dryRun"])
	if err != nil {
		return err
	}
	apply := rq.info.Verb == "patch" && patchTypeOf(rq.r) == types.ApplyYAMLPatchType
	if apply && rs.cr != nil {
		return notImplemented("server-side apply to a custom resource's scale subresource is not implemented yet in plainkube; use a JSON or merge patch, or PUT")
	}
	if rq.info.Verb == "patch" && rs.cr != nil {
		switch patchTypeOf(rq.r) {
		case types.JSONPatchType, types.MergePatchType:
		default:
			return unsupportedPatchType(customPatchTypes[:2])
		}
	}
	body, err := s.readBody(rq.r)
	if err != nil {
		return err
	}
	scaleGVK := autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	manager, err := fieldManagerName(rq.r, apply)
	if err != nil {
		return err
	}
	opts := writeOptions{dryRun: dryRun, manager: manager, applied: apply, admitted: true}
	updated, err := s.updateObject(ctx, rs, rq.info.Namespace, rq.info.Name, "", opts, func(current runtime.Object) (runtime.Object, error) {
		cur, err := scale.Of(current)
		if err != nil {
			return nil, err
		}
		var want *autoscalingv1.Scale
		var ok bool
		switch {
		case apply:
			if want, err = applyScale(rq, rs, current, cur, body, manager); err != nil {
				return nil, err
			}
		case rq.info.Verb == "update":
			obj, _, err := s.decodeBody(rq.r, body, scaleGVK, &autoscalingv1.Scale{}, validationIgnore)
			if err != nil {
				return nil, err
			}
			want = obj.(*autoscalingv1.Scale)
		default:
			var buf bytes.Buffer
			if err := s.codecs.json.Encode(cur, &buf); err != nil {
				return nil, err
			}
			patched, err := applyPatch(patchTypeOf(rq.r), buf.Bytes(), body, &autoscalingv1.Scale{})
			if err != nil {
				return nil, err
			}
			obj, _, err := decodeInto(s.codecs.json, patched, scaleGVK, &autoscalingv1.Scale{}, validationIgnore)
			if err != nil {
				return nil, err
			}
			want = obj.(*autoscalingv1.Scale)
			if want.ResourceVersion == cur.ResourceVersion {
				want.ResourceVersion = ""
			}
		}
		// Admission sees the write as upstream's does: an update of the
		// scale subresource, of a Scale.
		attrs := admissionAttributes(ctx, rs, admission.Update, "scale", rq.info.Namespace, rq.info.Name, want, cur, updateOptions(opts), dryRun)
		attrs.Kind = scaleGVK
		if err := s.mutate(ctx, attrs); err != nil {
			return nil, err
		}
		if want, ok = attrs.Object.(*autoscalingv1.Scale); !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("admission replaced the Scale with a %T", attrs.Object))
		}
		if want.Spec.Replicas < 0 {
			return nil, apierrors.NewInvalid(scaleGVK.GroupKind(), rq.info.Name, fieldErrors("spec.replicas", want.Spec.Replicas, "must be greater than or equal to 0"))
		}
		if err := s.validate(ctx, attrs); err != nil {
			return nil, err
		}
		if err := scale.SetReplicas(current, want.Spec.Replicas); err != nil {
			return nil, err
		}
		metaOf(current).SetResourceVersion(want.ResourceVersion)
		return current, nil
	})
	if err != nil {
		return err
	}
	sc, err := scale.Of(updated)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	s.writeResult(rq, http.StatusOK, sc)
	return nil
}

func patchTypeOf(r *http.Request) types.PatchType {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return types.PatchType(mt)
}

func fieldErrors(path string, value interface{}, msg string) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath(path), value, msg)}
}

// scaleManager tracks managed fields of autoscaling/v1 Scale objects. A
// Scale has no lists or maps whose merge keys matter, so the structure is
// deduced from the objects themselves.
var scaleManager = sync.OnceValues(func() (*managedfields.FieldManager, error) {
	return managedfields.NewDefaultFieldManager(managedfields.NewDeducedTypeConverter(), scheme, scheme, scheme,
		autoscalingv1.SchemeGroupVersion.WithKind("Scale"), autoscalingv1.SchemeGroupVersion, "scale", nil)
})

// applyScale serves a server-side apply to /scale as upstream does: the
// parent's managed fields for spec.replicas are mapped onto the Scale, the
// apply is merged there (409 on conflicts unless force), and the result is
// mapped back onto the parent, whose replicas and managedFields it sets.
func applyScale(rq *request, rs *resourceStore, parent runtime.Object, cur *autoscalingv1.Scale, body []byte, manager string) (*autoscalingv1.Scale, error) {
	patch, err := decodeApplyPatch(body)
	if err != nil {
		return nil, err
	}
	if patch.GetAPIVersion() != "autoscaling/v1" || patch.GetKind() != "Scale" {
		return nil, badRequest("the apply patch to a scale subresource must be an autoscaling/v1 Scale, not %s %s", patch.GetAPIVersion(), patch.GetKind())
	}
	if patch.GetName() != "" && patch.GetName() != rq.info.Name {
		return nil, badRequest("the name of the object (%s) does not match the name on the URL (%s)", patch.GetName(), rq.info.Name)
	}
	gv := rs.res.Kind.GroupVersion()
	handler := managedfields.NewScaleHandler(metaOf(parent).GetManagedFields(), gv,
		managedfields.ResourcePathMappings{gv.String(): fieldpath.MakePathOrDie("spec", "replicas")})
	entries, err := handler.ToSubresource()
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	cur.ManagedFields = entries
	fm, err := scaleManager()
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	obj, err := fm.Apply(cur, patch, manager, isTrue(rq.r.URL.Query().Get("force")))
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return nil, err
		}
		return nil, registry.NewStatusError(http.StatusUnprocessableEntity, "Invalid", err.Error())
	}
	want := obj.(*autoscalingv1.Scale)
	parentEntries, err := handler.ToParent(want.ManagedFields)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	metaOf(parent).SetManagedFields(parentEntries)
	if patch.GetResourceVersion() == "" {
		want.ResourceVersion = ""
	}
	return want, nil
}
