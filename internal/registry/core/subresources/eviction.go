package subresources

import (
	"net/http"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/registry"
)

// Eviction serves pods/eviction: a delete of the pod through the Eviction
// API, with the Eviction's DeleteOptions. PodDisruptionBudgets are not
// consulted yet.
var Eviction = registry.Handler{Serve: serveEviction}

func serveEviction(rq *registry.Request) error {
	body, err := createBody(rq)
	if err != nil {
		return err
	}
	obj, err := rq.API.DecodeJSON(body, policyv1.SchemeGroupVersion.WithKind("Eviction"), &policyv1.Eviction{})
	if err != nil {
		return badRequest("error decoding Eviction: %v", err)
	}
	ev, ok := obj.(*policyv1.Eviction)
	if !ok {
		return badRequest("expected an Eviction body")
	}
	if ev.Name != "" && ev.Name != rq.Name {
		return badRequest("name in URL does not match name in Eviction object")
	}
	if err := rq.API.AdmitCreate(ev); err != nil {
		return err
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if err := rq.API.Delete(opts); err != nil {
		return err
	}
	rq.API.WriteObject(http.StatusCreated, created())
	return nil
}
