package server

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/allocator"
	"plainkube.dev/plainkube/internal/admission/bootstrapcsr"
	"plainkube.dev/plainkube/internal/admission/certificates"
	"plainkube.dev/plainkube/internal/admission/defaultstorageclass"
	"plainkube.dev/plainkube/internal/admission/defaulttolerationseconds"
	"plainkube.dev/plainkube/internal/admission/draadminaccess"
	"plainkube.dev/plainkube/internal/admission/limitranger"
	"plainkube.dev/plainkube/internal/admission/namespacelifecycle"
	"plainkube.dev/plainkube/internal/admission/noderestriction"
	"plainkube.dev/plainkube/internal/admission/podsecurity"
	"plainkube.dev/plainkube/internal/admission/policy"
	"plainkube.dev/plainkube/internal/admission/priority"
	"plainkube.dev/plainkube/internal/admission/pvcresize"
	"plainkube.dev/plainkube/internal/admission/rbacescalation"
	"plainkube.dev/plainkube/internal/admission/resourcequota"
	"plainkube.dev/plainkube/internal/admission/runtimeclass"
	saadmission "plainkube.dev/plainkube/internal/admission/serviceaccount"
	"plainkube.dev/plainkube/internal/admission/storageobjectinuseprotection"
	"plainkube.dev/plainkube/internal/admission/taintnodesbycondition"
	admwebhook "plainkube.dev/plainkube/internal/admission/webhook"
	"plainkube.dev/plainkube/internal/apiserver"
	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/auth/rbac"
)

// admissionDeps are what the plugins of the chain are built over.
type admissionDeps struct {
	// objects reads the API server's storage (set once it exists).
	objects         *serverObjects
	serviceAccounts *saadmission.Plugin
	authz           auth.Authorizer
	rbac            *rbac.Authorizer
	services        *allocator.Services
	// The plugins that read the API through informers (startAdmission).
	limitRanger   *limitranger.Plugin
	podSecurity   *podsecurity.Plugin
	resourceQuota *resourcequota.Plugin
	webhooks      *admwebhook.Webhooks
	// policies is the ValidatingAdmissionPolicy plugin, whose source the
	// MutatingAdmissionPolicy plugin shares.
	policies *policy.Validating
	// controllerDefaults turns on the default plugins that need a
	// controller to finish their work (Options.DefaultAdmission):
	// ServiceAccount, TaintNodesByCondition, DefaultTolerationSeconds,
	// StorageObjectInUseProtection.
	controllerDefaults bool
	// extra plugins run last (Options.ExtraAdmission, for tests).
	extra []admission.Plugin
}

// admissionChain is the API server's one admission chain, in upstream's
// order (kube-apiserver's recommended plugin order, the plugins it has on
// by default): each plugin's Mutate runs in this order, then the
// resource's validation, then each plugin's Validate in this order.
// Slots marked "(later)" are plugins not written yet, kept where they go.
func admissionChain(d admissionDeps) admission.Chain {
	var chain admission.Chain
	add := func(p admission.Plugin) { chain = append(chain, p) }

	add(namespacelifecycle.New(d.objects))
	add(d.limitRanger.Plugin())
	if d.controllerDefaults {
		add(d.serviceAccounts.Step())
	}
	add(noderestriction.New(d.objects, d.authz))
	if d.controllerDefaults {
		// The node lifecycle controller removes the taint once the node is Ready.
		add(taintnodesbycondition.New())
	}
	add(d.podSecurity.Plugin())
	add(priority.New(d.objects))
	if d.controllerDefaults {
		add(defaulttolerationseconds.New())
	}
	add(defaultstorageclass.New(d.objects))
	if d.controllerDefaults {
		// The pvc-protection and pv-protection controllers remove its
		// finalizers: without them no claim or volume could be deleted.
		add(storageobjectinuseprotection.New())
	}
	add(pvcresize.New(d.objects))
	add(runtimeclass.New(d.objects))
	add(draadminaccess.New(d.objects))
	add(certificates.Approval(d.authz))
	add(certificates.Signing(d.authz))
	add(certificates.PodCertificateSigning(d.authz))
	add(certificates.Attest(d.authz))
	add(certificates.SubjectRestriction())
	// Not upstream's: bootstrap tokens may only ask for node client
	// certificates.
	add(bootstrapcsr.New())
	add(rbacescalation.New(d.authz, d.rbac))
	add(policy.NewMutating(d.policies).Plugin())
	add(d.webhooks.Mutating())
	add(d.policies.Plugin())
	add(d.webhooks.Validating())
	add(d.resourceQuota.Plugin())

	// Storage hooks, not upstream admission: where the Service allocator
	// sits in the list does not matter.
	add(d.services.Plugin())
	for _, p := range d.extra {
		add(p)
	}
	return chain
}

// serverObjects is admission.Objects over the API server, which is made
// after the chain it is given.
type serverObjects struct{ api *apiserver.Server }

var _ admission.Objects = (*serverObjects)(nil)

var errNoAPIServer = errors.New("admission: the API server is not running yet")

func (o *serverObjects) Get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	if o.api == nil {
		return nil, errNoAPIServer
	}
	return o.api.Get(ctx, gvr, ns, name)
}

func (o *serverObjects) List(ctx context.Context, gvr schema.GroupVersionResource, ns string) ([]runtime.Object, error) {
	if o.api == nil {
		return nil, errNoAPIServer
	}
	return o.api.List(ctx, gvr, ns)
}
