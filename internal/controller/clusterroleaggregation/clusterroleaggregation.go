package clusterroleaggregation

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "clusterroleaggregation"

// Component is the source of the events the controller records.
const Component = "clusterrole-aggregation-controller"

// Controller is the ClusterRole aggregation controller.
type Controller struct {
	controller.Base
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base}, nil
}

// Run watches ClusterRoles and reconciles the aggregated ones.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, QueueName: "ClusterRoleAggregator", Component: Component, Client: c.Client, Logger: c.Logger,
		Primary: &rbacv1.ClusterRole{}})
	inf := b.Informers().Rbac().V1().ClusterRoles()
	lister := inf.Lister()
	// Any ClusterRole may be a source of an aggregated one: each change
	// looks at every aggregated role (there are a handful).
	b.Watches(inf.Informer(), controller.AllEvents, func(_, _ any) []string { return aggregatedNames(lister) })
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, name string) (reconcile.Result, error) {
			return reconcile.Result{}, c.sync(ctx, lister, name)
		}
	})
}

func aggregatedNames(lister rbaclisters.ClusterRoleLister) []string {
	roles, _ := lister.List(labels.Everything())
	var names []string
	for _, r := range roles {
		if r.AggregationRule != nil {
			names = append(names, r.Name)
		}
	}
	return names
}

// sync observes the role and every ClusterRole, plans, and writes the
// rules (a conflict is retried through the queue).
func (c *Controller) sync(ctx context.Context, lister rbaclisters.ClusterRoleLister, name string) error {
	role, err := lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	all, err := lister.List(labels.Everything())
	if err != nil {
		return err
	}
	rules, write := plan(role, all)
	if !write {
		return nil
	}
	updated := role.DeepCopy()
	updated.Rules = rules
	_, err = c.Client.RbacV1().ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{FieldManager: Component})
	return err
}
