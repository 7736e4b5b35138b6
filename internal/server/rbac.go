package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	nodeauthz "plainkube.dev/plainkube/internal/auth/node"
	"plainkube.dev/plainkube/internal/auth/rbac"
	rbacpolicy "plainkube.dev/plainkube/internal/auth/rbac/bootstrap"
)

// startRBAC gives authz its roles and bindings and reconciles the default
// policy (package rbac/bootstrap) as upstream's rbac/bootstrap-roles
// post-start hook does at every start. It closes done once both are done:
// the server is not ready before.
//
// A seeded store (bootstrapSeed) holds the reconciled policy already:
// with seeded, it is only waited for.
func startRBAC(ctx context.Context, cfg *rest.Config, authz *rbac.Authorizer, log *slog.Logger, done chan<- struct{}, seeded bool) error {
	var (
		f   informers.SharedInformerFactory
		cs  kubernetes.Interface
		src *rbac.InformerSource
	)
	return startInformers(ctx, cfg, log, "RBAC", func(factory informers.SharedInformerFactory, client kubernetes.Interface) (func() bool, error) {
		var err error
		f, cs = factory, client
		src, err = rbac.NewInformerSource(f.Rbac().V1())
		if err != nil {
			return nil, err
		}
		return src.HasSynced, nil
	}, func(ctx context.Context) {
		authz.SetSource(src)
		// Retried until it succeeds: a server without its default roles
		// would refuse its own components.
		var err error
		if !seeded {
			err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
				if err := reconcilePolicy(ctx, cs, log); err != nil {
					log.Warn("reconciling the default RBAC policy; will retry", "err", err)
					return false, nil
				}
				return true, nil
			})
		}
		// Ready only once the authorizer itself sees the whole policy: the
		// components start at readiness and their first requests must not
		// be refused for a role written a moment ago.
		if err == nil && waitSynced(ctx, log, "RBAC informers (of the default policy)", func() bool { return policyObserved(f, desiredPolicy()) }) {
			close(done)
		}
	})
}

// policyObserved reports whether f's RBAC informers hold every object of p.
func policyObserved(f informers.SharedInformerFactory, p rbacpolicy.Policy) bool {
	r := f.Rbac().V1()
	for _, o := range p.ClusterRoles {
		if _, err := r.ClusterRoles().Lister().Get(o.Name); err != nil {
			return false
		}
	}
	for _, o := range p.ClusterRoleBindings {
		if _, err := r.ClusterRoleBindings().Lister().Get(o.Name); err != nil {
			return false
		}
	}
	for _, o := range p.Roles {
		if _, err := r.Roles().Lister().Roles(o.Namespace).Get(o.Name); err != nil {
			return false
		}
	}
	for _, o := range p.RoleBindings {
		if _, err := r.RoleBindings().Lister().RoleBindings(o.Namespace).Get(o.Name); err != nil {
			return false
		}
	}
	return true
}

// desiredPolicy is upstream's default policy plus plainkube's own roles
// and the join token's bindings.
func desiredPolicy() rbacpolicy.Policy {
	desired := rbacpolicy.Default()
	for _, p := range []rbacpolicy.Policy{rbacpolicy.Plainkube(), joinPolicy()} {
		desired.ClusterRoles = append(desired.ClusterRoles, p.ClusterRoles...)
		desired.ClusterRoleBindings = append(desired.ClusterRoleBindings, p.ClusterRoleBindings...)
		desired.Roles = append(desired.Roles, p.Roles...)
		desired.RoleBindings = append(desired.RoleBindings, p.RoleBindings...)
	}
	return desired
}

// startNodeGraph feeds the Node authorizer's graph from informers over
// the API server's own API, as upstream's API server does, and closes done
// once they have synced.
func startNodeGraph(ctx context.Context, cfg *rest.Config, log *slog.Logger, g *nodeauthz.Graph, done chan<- struct{}) error {
	return startInformers(ctx, cfg, log, "node authorizer", func(f informers.SharedInformerFactory, _ kubernetes.Interface) (func() bool, error) {
		return nodeauthz.Populate(g, f)
	}, func(context.Context) { close(done) })
}

// reconcilePolicy reads the RBAC objects there are, plans what the default
// policy needs (creates, additions, recreated bindings) and writes it.
func reconcilePolicy(ctx context.Context, cs kubernetes.Interface, log *slog.Logger) error {
	desired := desiredPolicy()
	namespaces := map[string]bool{}
	for _, r := range desired.Roles {
		namespaces[r.Namespace] = true
	}
	for ns := range namespaces {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	var existing rbacpolicy.Policy
	r := cs.RbacV1()
	crs, err := r.ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	existing.ClusterRoles = crs.Items
	crbs, err := r.ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	existing.ClusterRoleBindings = crbs.Items
	for ns := range namespaces {
		roles, err := r.Roles(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		existing.Roles = append(existing.Roles, roles.Items...)
		bindings, err := r.RoleBindings(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		existing.RoleBindings = append(existing.RoleBindings, bindings.Items...)
	}
	plan := rbacpolicy.Reconcile(existing, desired)
	if plan.Empty() {
		return nil
	}
	// The writes go in parallel: etcd commits concurrent writes together,
	// and a first start writes some 140 objects.
	var writes []func() int
	for _, a := range plan.ClusterRoles {
		writes = append(writes, func() int {
			return apply(ctx, a, log, r.ClusterRoles().Create, r.ClusterRoles().Update, r.ClusterRoles().Delete)
		})
	}
	for _, a := range plan.ClusterRoleBindings {
		writes = append(writes, func() int {
			return apply(ctx, a, log, r.ClusterRoleBindings().Create, r.ClusterRoleBindings().Update, r.ClusterRoleBindings().Delete)
		})
	}
	for _, a := range plan.Roles {
		c := r.Roles(a.Object.Namespace)
		writes = append(writes, func() int { return apply(ctx, a, log, c.Create, c.Update, c.Delete) })
	}
	for _, a := range plan.RoleBindings {
		c := r.RoleBindings(a.Object.Namespace)
		writes = append(writes, func() int { return apply(ctx, a, log, c.Create, c.Update, c.Delete) })
	}
	var written, failed atomic.Int32
	var g errgroup.Group
	g.SetLimit(32)
	for _, w := range writes {
		g.Go(func() error {
			if n := w(); n < 0 {
				failed.Add(1)
			} else {
				written.Add(int32(n))
			}
			return nil
		})
	}
	g.Wait()
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d writes of the default policy failed", n)
	}
	log.Info("reconciled the default RBAC policy", "writes", written.Load())
	return nil
}

// apply carries out one action of a bootstrap plan: 1 for a write, 0 for
// nothing to do, -1 (logged) for a write that failed.
func apply[R any, P interface {
	*R
	metav1.Object
}](ctx context.Context, a rbacpolicy.Action[R], log *slog.Logger,
	create func(context.Context, P, metav1.CreateOptions) (P, error),
	update func(context.Context, P, metav1.UpdateOptions) (P, error),
	del func(context.Context, string, metav1.DeleteOptions) error) int {
	obj := P(&a.Object)
	var err error
	switch a.Op {
	case rbacpolicy.Skip:
		log.Warn("a default RBAC object differs from upstream's and has autoupdate=false; leaving it", "name", obj.GetName(), "namespace", obj.GetNamespace())
		return 0
	case rbacpolicy.Create:
		_, err = create(ctx, obj, metav1.CreateOptions{})
	case rbacpolicy.Update:
		_, err = update(ctx, obj, metav1.UpdateOptions{})
	case rbacpolicy.Recreate:
		existing := P(a.Existing)
		uid := existing.GetUID()
		if err = del(ctx, existing.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err == nil || apierrors.IsNotFound(err) {
			obj.SetResourceVersion("")
			_, err = create(ctx, obj, metav1.CreateOptions{})
		}
	default:
		return 0
	}
	if err != nil {
		log.Warn("writing the default RBAC policy", "name", obj.GetName(), "namespace", obj.GetNamespace(), "err", err)
		return -1
	}
	return 1
}
