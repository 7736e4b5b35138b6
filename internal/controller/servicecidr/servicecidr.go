package servicecidr

import (
	"context"
	"encoding/json"
	"net/netip"
	"slices"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "servicecidr"

// Controller is the ServiceCIDR controller.
type Controller struct {
	controller.Base
	cidrs networkinglisters.ServiceCIDRLister
	ips   networkinglisters.IPAddressLister
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

// Run watches ServiceCIDRs and IPAddresses until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: "service-cidr-controller", Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	cidrInf := b.Informers().Networking().V1().ServiceCIDRs()
	ipInf := b.Informers().Networking().V1().IPAddresses()
	c.cidrs, c.ips = cidrInf.Lister(), ipInf.Lister()
	// A ServiceCIDR being deleted is looked at again when an address
	// goes or another range changes.
	terminating := func(_, _ any) []string {
		all, _ := c.cidrs.List(labels.Everything())
		var keys []string
		for _, sc := range all {
			if sc.DeletionTimestamp != nil {
				keys = append(keys, sc.Name)
			}
		}
		return keys
	}
	b.For(cidrInf.Informer(), networkingv1.SchemeGroupVersion.WithKind("ServiceCIDR")).
		Watches(cidrInf.Informer(), controller.Added|controller.Updated|controller.Deleted, terminating).
		Watches(ipInf.Informer(), controller.Deleted, terminating)
	log := b.Logger()
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return controller.Shape[State, Plan]{Observe: c.observe, Plan: plan, Apply: c.apply, Log: log}.Reconcile
	})
}

func (c *Controller) observe(name string) (State, bool, error) {
	sc, err := c.cidrs.Get(name)
	if apierrors.IsNotFound(err) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	st := State{CIDR: sc, Now: time.Now()}
	all, err := c.cidrs.List(labels.Everything())
	if err != nil {
		return State{}, false, err
	}
	for _, o := range all {
		if o.Name != name {
			st.Others = append(st.Others, o)
		}
	}
	if sc.DeletionTimestamp != nil {
		ips, err := c.ips.List(labels.Everything())
		if err != nil {
			return State{}, false, err
		}
		for _, ip := range ips {
			if _, err := netip.ParseAddr(ip.Name); err == nil {
				st.Addresses = append(st.Addresses, ip.Name)
			}
		}
	}
	return st, true, nil
}

func (c *Controller) apply(ctx context.Context, st State, p Plan) (reconcile.Result, error) {
	api := c.Client.NetworkingV1().ServiceCIDRs()
	cur := st.CIDR
	var err error
	if p.AddFinalizer || p.RemoveFinalizer {
		fins := slices.Clone(cur.Finalizers)
		if p.AddFinalizer {
			fins = append(fins, Finalizer)
		} else {
			fins = slices.DeleteFunc(fins, func(f string) bool { return f == Finalizer })
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": fins, "resourceVersion": cur.ResourceVersion}})
		// The status write below goes on from what the patch returns.
		if cur, err = api.Patch(ctx, cur.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return reconcile.Result{}, controller.IgnoreNotFound(err)
		}
	}
	if p.Condition != nil {
		upd := cur.DeepCopy()
		meta.SetStatusCondition(&upd.Status.Conditions, *p.Condition)
		if _, err := api.UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return reconcile.Result{}, controller.IgnoreNotFound(err)
		}
	}
	return reconcile.Result{RequeueAfter: p.RecheckAfter}, nil
}
