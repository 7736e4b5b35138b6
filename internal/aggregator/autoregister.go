package aggregator

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"plainkube.dev/plainkube/internal/apiserver"
)

// The label upstream puts on the APIServices it manages: "onstart" for a
// built-in group-version, "true" for a custom resource's.
const (
	autoManagedLabel = "kube-aggregator.kubernetes.io/automanaged"
	managedOnStart   = "onstart"
	managedSynced    = "true"
)

// autoregister makes the local APIServices match what this server serves
// itself: one per built-in group-version and per served version of a
// CustomResourceDefinition (its group-version not built in). It creates
// the missing ones, keeps those of custom resources in step, and deletes
// managed ones nothing serves any more. An APIService a user turned into a
// remote one (by giving it a Service) is left as it is.
func (c *Controller) autoregister(ctx context.Context) error {
	desired := map[string]*apiregistrationv1.APIService{}
	add := func(gv schema.GroupVersion, p apiserver.Priority, managed string) {
		name := gv.Version + "." + gv.Group
		if _, ok := desired[name]; ok {
			return
		}
		desired[name] = &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{autoManagedLabel: managed}},
			Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version,
				GroupPriorityMinimum: p.Group, VersionPriority: p.Version},
		}
	}
	for _, gv := range c.opts.Local {
		if p, ok := apiserver.BuiltinPriority(gv); ok {
			add(gv, p, managedOnStart)
		}
	}
	crds, err := c.crds.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				add(schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}, apiserver.CustomResourcePriority, managedSynced)
			}
		}
	}
	existing, err := c.apiServices.List(labels.Everything())
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range existing {
		want, ok := desired[a.Name]
		delete(desired, a.Name)
		managed := a.Labels[autoManagedLabel]
		switch {
		case managed == "":
			// Not ours.
		case !ok:
			err := c.client.APIServices().Delete(ctx, a.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &a.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, err)
			}
		case managed == managedSynced && a.Spec.Service == nil && !equality.Semantic.DeepEqual(a.Spec, want.Spec):
			next := a.DeepCopy()
			next.Spec = want.Spec
			if _, err := c.client.APIServices().Update(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	for _, a := range desired {
		if _, err := c.client.APIServices().Create(ctx, a, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
