package apiserver

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry"
)

// serveHandler hands a request to the handler its resource declared
// (registry.Handler), lending it the server through handlerAPI.
func (s *Server) serveHandler(h registry.Handler, rq *request) error {
	return h.Serve(&registry.Request{W: rq.w, R: rq.r, Verb: rq.info.Verb, Resource: schemaGVR(rq.info),
		Subresource: rq.info.Subresource, Namespace: rq.info.Namespace, Name: rq.info.Name,
		API: &handlerAPI{s: s, rq: rq}})
}

// handlerAPI is registry.API for one request. rq.rs is nil for an
// ephemeral resource, which has no object to update or delete.
type handlerAPI struct {
	s  *Server
	rq *request
}

var _ registry.API = (*handlerAPI)(nil)

func (a *handlerAPI) Get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	return a.s.Get(ctx, gvr, ns, name)
}

func (a *handlerAPI) List(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts registry.ListOptions) ([]runtime.Object, error) {
	rs, ok := a.s.stores[gvr]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	}
	lo := &listOptions{labels: opts.Labels, fields: opts.Fields, rv: opts.ResourceVersion}
	if lo.labels == nil {
		lo.labels = labels.Everything()
	}
	if lo.fields == nil {
		lo.fields = fields.Everything()
	}
	objs, _, err := a.s.listMatching(ctx, rs, ns, lo)
	return objs, err
}

func (a *handlerAPI) ReadBody() ([]byte, error) { return a.s.readBody(a.rq.r) }

func (a *handlerAPI) Decode(body []byte, gvk schema.GroupVersionKind, into runtime.Object) (runtime.Object, error) {
	obj, _, err := a.s.decodeBody(a.rq.r, body, gvk, into, validationIgnore)
	return obj, err
}

func (a *handlerAPI) DecodeJSON(body []byte, gvk schema.GroupVersionKind, into runtime.Object) (runtime.Object, error) {
	obj, _, err := a.s.codecs.json.Decode(body, &gvk, into)
	return obj, err
}

func (a *handlerAPI) Update(manager string, mutate func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	rq := a.rq
	dryRun, err := parseDryRun(rq.r.URL.Query()["dryRun"])
	if err != nil {
		return nil, err
	}
	return a.s.updateObject(rq.r.Context(), rq.rs, rq.info.Namespace, rq.info.Name, rq.info.Subresource, writeOptions{dryRun: dryRun, manager: manager, admitted: true}, mutate)
}

func (a *handlerAPI) UpdateOther(ctx context.Context, gvr schema.GroupVersionResource, subresource, ns, name, manager string,
	mutate func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	rs, ok := a.s.stores[gvr]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return a.s.updateObject(ctx, rs, ns, name, subresource, writeOptions{manager: manager, admitted: true}, mutate)
}

func (a *handlerAPI) Delete(opts *metav1.DeleteOptions) error {
	rq := a.rq
	_, _, err := a.s.deleteObject(rq.r.Context(), rq.rs, rq.info.Namespace, rq.info.Name, opts, false)
	return err
}

func (a *handlerAPI) AdmitCreate(obj runtime.Object) error {
	dryRun, err := parseDryRun(a.rq.r.URL.Query()["dryRun"])
	if err != nil {
		return err
	}
	opts := &metav1.CreateOptions{DryRun: dryRunValue(dryRun), FieldManager: a.rq.r.URL.Query().Get("fieldManager")}
	return a.admitSubresource(admission.Create, obj, opts, dryRun)
}

func (a *handlerAPI) AdmitConnect(opts runtime.Object) error {
	return a.admitSubresource(admission.Connect, opts, nil, false)
}

func (a *handlerAPI) admitSubresource(op admission.Operation, obj, opts runtime.Object, dryRun bool) error {
	rq := a.rq
	ctx := rq.r.Context()
	return a.s.admit(ctx, &admission.Attributes{Operation: op, Kind: a.s.kindOf(obj), Resource: schemaGVR(rq.info),
		Subresource: rq.info.Subresource, Namespace: rq.info.Namespace, Name: rq.info.Name,
		Object: obj, Options: opts, DryRun: dryRun, User: auth.UserFrom(ctx)})
}

func (a *handlerAPI) Negotiate() error {
	out, err := a.s.codecs.negotiate(a.rq.r, false)
	if err == nil {
		a.rq.out = out
	}
	return err
}

func (a *handlerAPI) WriteObject(code int, obj runtime.Object) {
	a.s.codecs.writeObject(a.rq.w, a.rq.out, code, obj)
}

func (a *handlerAPI) WriteError(err error) { a.s.codecs.writeError(a.rq.w, a.rq.r, err) }

func (a *handlerAPI) WantsTable() bool {
	n, err := a.s.codecs.negotiate(a.rq.r, true)
	return err == nil && n.kind == outputTable
}

func (a *handlerAPI) Authorize(verb string) error { return a.s.authorizeAlso(a.rq, verb) }

func (a *handlerAPI) Now() time.Time { return a.s.now() }

func (a *handlerAPI) Logger() *slog.Logger { return a.s.log }

func (a *handlerAPI) KubeletClient() *http.Client { return a.s.cfg.KubeletClient }

func (a *handlerAPI) Authenticator() auth.Authenticator { return a.s.cfg.Authenticator }

func (a *handlerAPI) Authorizer() auth.Authorizer { return a.s.cfg.Authorizer }

func (a *handlerAPI) ServiceAccounts() *auth.ServiceAccountTokens { return a.s.cfg.ServiceAccounts }

func (a *handlerAPI) Components() []registry.ComponentCheck { return a.s.cfg.Components }

// authorizeAlso checks that the request's user may also do verb on the
// request's resource and subresource.
func (s *Server) authorizeAlso(rq *request, verb string) error {
	user := auth.UserFrom(rq.r.Context())
	attrs := auth.Attributes{User: user, Verb: verb, IsResource: true, Path: rq.r.URL.Path,
		APIGroup: rq.info.Group, APIVersion: rq.info.Version, Namespace: rq.info.Namespace,
		Resource: rq.info.Resource, Subresource: rq.info.Subresource, Name: rq.info.Name}
	decision, reason, err := s.cfg.Authorizer.Authorize(rq.r.Context(), attrs)
	if err != nil || decision != auth.Allow {
		return forbidden(attrs, reason)
	}
	return nil
}
