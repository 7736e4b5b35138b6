package apiserver

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"plainkube.dev/plainkube/internal/registry"
	"sigs.k8s.io/yaml"
)

// handleApply serves server-side apply (application/apply-patch+yaml): the
// field manager merges the applied configuration into the live object,
// taking ownership of the fields it sets and failing with 409 when another
// manager owns one of them (unless force=true). Applying to an object that
// does not exist creates it.
func (s *Server) handleApply(rq *request, subresource string, dryRun bool, fv fieldValidation) error {
	ctx := rq.r.Context()
	rs := rq.rs
	manager, err := fieldManagerName(rq.r, true)
	if err != nil {
		return err
	}
	force := isTrue(rq.r.URL.Query().Get("force"))
	body, err := s.readBody(rq.r)
	if err != nil {
		return err
	}
	patch, err := decodeApplyPatch(body)
	if err != nil {
		return err
	}
	gv := rs.res.Kind.GroupVersion()
	if patch.GetAPIVersion() != gv.String() || patch.GetKind() != rs.res.Kind.Kind {
		return badRequest("the API version and kind in the apply patch (%s, %s) do not match the URL's (%s, %s)", patch.GetAPIVersion(), patch.GetKind(), gv, rs.res.Kind.Kind)
	}
	if patch.GetName() != rq.info.Name {
		return badRequest("the name of the object (%s) does not match the name on the URL (%s)", patch.GetName(), rq.info.Name)
	}
	if ns := patch.GetNamespace(); ns != "" && ns != rq.info.Namespace {
		return badRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	fm, err := rs.fieldManager(managerSubresource(subresource))
	if err != nil || fm == nil {
		return notImplemented("server-side apply is not available for " + rs.gr.String() + "/" + subresource)
	}
	apply := func(live runtime.Object) (runtime.Object, error) {
		obj, err := fm.Apply(live, patch.DeepCopy(), manager, force)
		if err != nil {
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				return nil, err
			}
			return nil, registry.NewStatusError(http.StatusUnprocessableEntity, "Invalid", err.Error())
		}
		if rv := patch.GetResourceVersion(); rv == "" {
			metaOf(obj).SetResourceVersion("")
		}
		return obj, nil
	}
	opts := writeOptions{dryRun: dryRun, manager: manager, applied: true}
	updated, err := s.updateObject(ctx, rs, rq.info.Namespace, rq.info.Name, subresource, opts, apply)
	code := http.StatusOK
	if apierrors.IsNotFound(err) && subresource == "" {
		live := rs.newObject()
		live.GetObjectKind().SetGroupVersionKind(rs.res.Kind)
		m := metaOf(live)
		m.SetName(rq.info.Name)
		m.SetNamespace(rq.info.Namespace)
		obj, aerr := apply(live)
		if aerr != nil {
			return aerr
		}
		updated, err = s.createObject(ctx, rs, rq.info.Namespace, obj, opts)
		code = http.StatusCreated
	}
	if err != nil {
		return err
	}
	s.writeResult(rq, code, updated)
	return nil
}

// decodeApplyPatch reads an apply configuration (YAML or JSON) as an
// unstructured object, its whole numbers int64 as upstream's unstructured
// decoding makes them (CEL rules and schemas of integer fields refuse a
// float64).
func decodeApplyPatch(body []byte) (*unstructured.Unstructured, error) {
	data, err := yaml.YAMLToJSONStrict(body)
	if err != nil {
		return nil, badRequest("error decoding YAML: %v", err)
	}
	var m map[string]interface{}
	if err := utiljson.Unmarshal(data, &m); err != nil || m == nil {
		return nil, badRequest("the apply patch must be an object")
	}
	return &unstructured.Unstructured{Object: m}, nil
}
