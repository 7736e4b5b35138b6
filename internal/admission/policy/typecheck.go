package policy

import (
	"context"
	"log/slog"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// typeChecker writes each policy generation's status.typeChecking (the
// warnings of checking its validations against the schemas of the kinds
// it matches, from the API server's OpenAPI) and status.observedGeneration,
// as upstream's type-checking controller. It reads and writes only
// through the API.
type typeChecker struct {
	client   kubernetes.Interface
	policies cache.Indexer
	mapper   meta.ResettableRESTMapper
	checker  *validating.TypeChecker
	queue    workqueue.TypedRateLimitingInterface[string]
	log      *slog.Logger
}

func newTypeChecker(client kubernetes.Interface, dc discovery.DiscoveryInterface, mapper meta.ResettableRESTMapper, policies cache.SharedIndexInformer, log *slog.Logger) (*typeChecker, error) {
	tc := &typeChecker{
		client: client, policies: policies.GetIndexer(), mapper: mapper,
		checker: &validating.TypeChecker{SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: dc}, RestMapper: mapper},
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		log:     log,
	}
	enqueue := func(obj any) {
		if p, ok := obj.(*admissionv1.ValidatingAdmissionPolicy); ok && p.Status.ObservedGeneration != p.Generation {
			tc.queue.Add(p.Name)
		}
	}
	_, err := policies.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	return tc, err
}

func (tc *typeChecker) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		tc.queue.ShutDown()
	}()
	for {
		name, shutdown := tc.queue.Get()
		if shutdown {
			return
		}
		if err := tc.sync(ctx, name); err != nil {
			tc.log.Warn("type checking a ValidatingAdmissionPolicy; will retry", "name", name, "err", err)
			tc.queue.AddRateLimited(name)
		} else {
			tc.queue.Forget(name)
		}
		tc.queue.Done(name)
	}
}

func (tc *typeChecker) sync(ctx context.Context, name string) error {
	obj, ok, err := tc.policies.GetByKey(name)
	if err != nil || !ok {
		return err
	}
	p := obj.(*admissionv1.ValidatingAdmissionPolicy)
	if p.Status.ObservedGeneration == p.Generation {
		return nil
	}
	// Kinds served since the mapper last read discovery (new CRDs).
	tc.mapper.Reset()
	warnings := tc.checker.Check(p)
	p = p.DeepCopy()
	p.Status.TypeChecking = &admissionv1.TypeChecking{ExpressionWarnings: warnings}
	p.Status.ObservedGeneration = p.Generation
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = tc.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or a newer generation whose event queues it again.
		return nil
	}
	return err
}
