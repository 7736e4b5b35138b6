package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	sigsjson "sigs.k8s.io/json"

	"plainkube.dev/plainkube/internal/admission"
)

// review is one AdmissionReview sent: its uid, version and body.
type review struct {
	uid     types.UID
	version string // "v1" or "v1beta1"
	body    []byte
}

// reviewVersion is the first AdmissionReview version a webhook accepts
// that this server sends.
func reviewVersion(h *hook) (string, bool) {
	for _, v := range h.admissionReviewVersions {
		if v == "v1" || v == "v1beta1" {
			return v, true
		}
	}
	return "", false
}

// newReview builds the AdmissionReview of a request for inv's webhook:
// kind and resource are those the webhook matched (requestKind and
// requestResource the request's own), with obj and old at that kind.
func newReview(a *admission.Attributes, inv *invocation, obj, old runtime.Object) (*review, error) {
	version, ok := reviewVersion(inv.hook)
	if !ok {
		return nil, errors.New("webhook does not accept known AdmissionReview versions (v1, v1beta1)")
	}
	objRaw, err := rawObject(obj, inv.kind)
	if err != nil {
		return nil, err
	}
	oldRaw, err := rawObject(old, inv.kind)
	if err != nil {
		return nil, err
	}
	optsRaw, err := rawObject(a.Options, optionsKind(a.Options))
	if err != nil {
		return nil, err
	}
	dryRun := a.DryRun
	uid := uuid.NewUUID()
	req := admissionv1.AdmissionRequest{
		UID:                uid,
		Kind:               metav1.GroupVersionKind(inv.kind),
		Resource:           metav1.GroupVersionResource(inv.resource),
		SubResource:        a.Subresource,
		RequestKind:        &metav1.GroupVersionKind{Group: a.Kind.Group, Version: a.Kind.Version, Kind: a.Kind.Kind},
		RequestResource:    &metav1.GroupVersionResource{Group: a.Resource.Group, Version: a.Resource.Version, Resource: a.Resource.Resource},
		RequestSubResource: a.Subresource,
		Name:               a.Name,
		Namespace:          a.Namespace,
		Operation:          admissionv1.Operation(a.Operation),
		UserInfo:           reviewUser(a),
		Object:             objRaw,
		OldObject:          oldRaw,
		DryRun:             &dryRun,
		Options:            optsRaw,
	}
	var out any
	if version == "v1" {
		out = &admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &req}
	} else {
		// v1beta1's request has the same fields and JSON names.
		b := admissionv1beta1.AdmissionRequest{
			UID: req.UID, Kind: req.Kind, Resource: req.Resource, SubResource: req.SubResource, RequestKind: req.RequestKind,
			RequestResource: req.RequestResource, RequestSubResource: req.RequestSubResource, Name: req.Name, Namespace: req.Namespace,
			Operation: admissionv1beta1.Operation(req.Operation), UserInfo: req.UserInfo, Object: req.Object, OldObject: req.OldObject,
			DryRun: req.DryRun, Options: req.Options,
		}
		out = &admissionv1beta1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1beta1", Kind: "AdmissionReview"}, Request: &b}
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &review{uid: uid, version: version, body: body}, nil
}

func reviewUser(a *admission.Attributes) authenticationv1.UserInfo {
	u := authenticationv1.UserInfo{Extra: map[string]authenticationv1.ExtraValue{}}
	if a.User != nil {
		u.Username, u.UID, u.Groups = a.User.Name, a.User.UID, a.User.Groups
		for k, v := range a.User.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// optionsKind is the kind of a request's options (CreateOptions,
// UpdateOptions, DeleteOptions: meta.k8s.io/v1).
func optionsKind(opts runtime.Object) schema.GroupVersionKind {
	switch opts.(type) {
	case *metav1.CreateOptions:
		return metav1.SchemeGroupVersion.WithKind("CreateOptions")
	case *metav1.UpdateOptions:
		return metav1.SchemeGroupVersion.WithKind("UpdateOptions")
	case *metav1.DeleteOptions:
		return metav1.SchemeGroupVersion.WithKind("DeleteOptions")
	case *metav1.PatchOptions:
		return metav1.SchemeGroupVersion.WithKind("PatchOptions")
	}
	if opts != nil {
		return opts.GetObjectKind().GroupVersionKind()
	}
	return schema.GroupVersionKind{}
}

// rawObject is obj's JSON with its apiVersion and kind set (objects in
// the server may carry none).
func rawObject(obj runtime.Object, kind schema.GroupVersionKind) (runtime.RawExtension, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return runtime.RawExtension{}, nil
	}
	data, err := encode(obj, kind)
	return runtime.RawExtension{Raw: data}, err
}

// encode is obj's JSON with apiVersion and kind set to kind (when kind is
// known).
func encode(obj runtime.Object, kind schema.GroupVersionKind) ([]byte, error) {
	if kind.Empty() || obj.GetObjectKind().GroupVersionKind() == kind {
		return json.Marshal(obj)
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		c := *u
		c.Object = make(map[string]any, len(u.Object))
		for k, v := range u.Object {
			c.Object[k] = v
		}
		c.SetGroupVersionKind(kind)
		return json.Marshal(&c)
	}
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(kind)
	return json.Marshal(c)
}

// decodeLike decodes data into a new object of obj's Go type, keeping
// obj's apiVersion and kind.
func decodeLike(obj runtime.Object, data []byte) (runtime.Object, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	var out runtime.Object
	if _, ok := obj.(*unstructured.Unstructured); ok {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, err
		}
		out = u
	} else {
		t := reflect.TypeOf(obj)
		if t.Kind() != reflect.Pointer {
			return nil, fmt.Errorf("cannot decode into %T", obj)
		}
		out = reflect.New(t.Elem()).Interface().(runtime.Object)
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, out); err != nil {
			return nil, err
		}
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out, nil
}

// response is what a webhook answered, whichever the version.
type response struct {
	allowed          bool
	result           *metav1.Status
	patch            []byte
	patchType        admissionv1.PatchType
	auditAnnotations map[string]string
	warnings         []string
}

// verifyResponse decodes and checks a webhook's answer, as upstream's
// VerifyAdmissionResponse (messages included).
func verifyResponse(rv *review, data []byte, mutating bool) (*response, error) {
	if rv.version == "v1beta1" {
		var r admissionv1beta1.AdmissionReview
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, decodeError{err}
		}
		if r.Response == nil {
			return nil, errors.New("webhook response was absent")
		}
		out := &response{allowed: r.Response.Allowed, result: r.Response.Result, auditAnnotations: r.Response.AuditAnnotations, warnings: r.Response.Warnings}
		if mutating && len(r.Response.Patch) > 0 {
			out.patch, out.patchType = r.Response.Patch, admissionv1.PatchTypeJSONPatch
		}
		return out, nil
	}
	var r admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, decodeError{err}
	}
	if r.Response == nil {
		return nil, errors.New("webhook response was absent")
	}
	if r.Response.UID != rv.uid {
		return nil, fmt.Errorf("expected response.uid=%q, got %q", rv.uid, r.Response.UID)
	}
	if got := schema.FromAPIVersionAndKind(r.APIVersion, r.Kind); got != admissionv1.SchemeGroupVersion.WithKind("AdmissionReview") {
		return nil, fmt.Errorf("expected webhook response of %v, got %v", admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"), got)
	}
	out := &response{allowed: r.Response.Allowed, result: r.Response.Result, auditAnnotations: r.Response.AuditAnnotations, warnings: r.Response.Warnings}
	if mutating {
		if len(r.Response.Patch) > 0 && r.Response.PatchType == nil {
			return nil, errors.New("webhook returned response.patch but not response.patchType")
		}
		if len(r.Response.Patch) == 0 && r.Response.PatchType != nil {
			return nil, errors.New("webhook returned response.patchType but not response.patch")
		}
		out.patch = r.Response.Patch
		if r.Response.PatchType != nil {
			out.patchType = *r.Response.PatchType
			if out.patchType == "" {
				return nil, fmt.Errorf("webhook returned invalid response.patchType of %q", out.patchType)
			}
		}
	} else {
		if len(r.Response.Patch) > 0 {
			return nil, errors.New("validating webhook may not return response.patch")
		}
		if r.Response.PatchType != nil {
			return nil, errors.New("validating webhook may not return response.patchType")
		}
	}
	return out, nil
}

// decodeError is an answer that is not JSON of an AdmissionReview: a
// failure to call the webhook, as upstream's client reports it.
type decodeError struct{ err error }

func (e decodeError) Error() string {
	return "couldn't get version/kind; json parse error: " + e.err.Error()
}
func (e decodeError) Unwrap() error { return e.err }
