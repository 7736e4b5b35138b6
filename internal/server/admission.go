package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/allocator"
	"plainkube.dev/plainkube/internal/admission/bootstrapcsr"
	"plainkube.dev/plainkube/internal/admission/certificates"
	"plainkube.dev/plainkube/internal/admission/defaultingressclass"
	"plainkube.dev/plainkube/internal/admission/defaultstorageclass"
	"plainkube.dev/plainkube/internal/admission/defaulttolerationseconds"
	"plainkube.dev/plainkube/internal/admission/draadminaccess"
	"plainkube.dev/plainkube/internal/admission/eventratelimit"
	"plainkube.dev/plainkube/internal/admission/limitranger"
	"plainkube.dev/plainkube/internal/admission/namespacelifecycle"
	"plainkube.dev/plainkube/internal/admission/noderestriction"
	"plainkube.dev/plainkube/internal/admission/ownerreferences"
	"plainkube.dev/plainkube/internal/admission/podresize"
	"plainkube.dev/plainkube/internal/admission/podsecurity"
	"plainkube.dev/plainkube/internal/admission/podtopologylabels"
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
	// enable and disable switch upstream's plugins on and off by name
	// (Options.EnableAdmissionPlugins, DisableAdmissionPlugins).
	enable, disable []string
	// kinds maps an owner's kind to its resources.
	kinds *serverKinds
	// pluginConfigs are the plugins' configurations read from the
	// --admission-control-config-file, by plugin name.
	pluginConfigs map[string][]byte
}

// ControllerDefaultPlugins are upstream's default admission plugins that
// only Options.DefaultAdmission turns on, as they need controllers to
// finish their work (admissionDeps.controllerDefaults below). A server
// that wants them without the rest of DefaultAdmission (the envtest
// stand-in, standing for a bare kube-apiserver) names them in
// Options.EnableAdmissionPlugins.
var ControllerDefaultPlugins = []string{saadmission.Name, taintnodesbycondition.Name,
	defaulttolerationseconds.Name, storageobjectinuseprotection.Name}

// admissionChain is the API server's one admission chain, in upstream's
// order (kube-apiserver's recommended plugin order): each plugin's Mutate
// runs in this order, then the resource's validation, then each plugin's
// Validate in this order. The plugins upstream has on by default are on,
// the others off; --enable-admission-plugins and
// --disable-admission-plugins (d.enable, d.disable) switch them by
// upstream's names. Plugins that are not upstream's are always on.
func admissionChain(d admissionDeps) (admission.Chain, error) {
	var chain admission.Chain
	implemented := map[string]bool{}
	enable, disable := toSet(d.enable), toSet(d.disable)
	// add adds an upstream plugin, on by default if on.
	add := func(p admission.Plugin, on bool) {
		implemented[p.Name] = true
		if (on || enable[p.Name]) && !disable[p.Name] {
			chain = append(chain, p)
		}
	}
	// always adds a plugin of plainkube's own.
	always := func(p admission.Plugin) { chain = append(chain, p) }

	add(namespacelifecycle.New(d.objects), true)
	add(d.limitRanger.Plugin(), true)
	add(d.serviceAccounts.Step(), d.controllerDefaults)
	add(noderestriction.New(d.objects, d.authz), true)
	// The node lifecycle controller removes the taint once the node is Ready.
	add(taintnodesbycondition.New(), d.controllerDefaults)
	add(d.podSecurity.Plugin(), true)
	add(priority.New(d.objects), true)
	add(defaulttolerationseconds.New(), d.controllerDefaults)
	implemented[eventratelimit.Name] = true
	if enable[eventratelimit.Name] && !disable[eventratelimit.Name] {
		cfg, err := eventratelimit.ParseConfiguration(d.pluginConfigs[eventratelimit.Name])
		if err != nil {
			return nil, err
		}
		add(eventratelimit.New(cfg), false)
	}
	add(defaultstorageclass.New(d.objects), true)
	// The pvc-protection and pv-protection controllers remove its
	// finalizers: without them no claim or volume could be deleted.
	add(storageobjectinuseprotection.New(), d.controllerDefaults)
	add(ownerreferences.New(d.authz, d.kinds), false)
	add(pvcresize.New(d.objects), true)
	add(runtimeclass.New(d.objects), true)
	always(draadminaccess.New(d.objects))
	add(certificates.Approval(d.authz), true)
	add(certificates.Signing(d.authz), true)
	always(certificates.PodCertificateSigning(d.authz))
	add(certificates.Attest(d.authz), true)
	add(certificates.SubjectRestriction(), true)
	add(defaultingressclass.New(d.objects), true)
	// Not upstream's: bootstrap tokens may only ask for node client
	// certificates.
	always(bootstrapcsr.New())
	always(rbacescalation.New(d.authz, d.rbac))
	add(podtopologylabels.New(d.objects), true)
	add(podresize.New(d.objects), true)
	add(policy.NewMutating(d.policies).Plugin(), true)
	add(d.webhooks.Mutating(), true)
	add(d.policies.Plugin(), true)
	add(d.webhooks.Validating(), true)
	add(d.resourceQuota.Plugin(), true)

	// Storage hooks, not upstream admission: where the Service allocator
	// sits in the list does not matter.
	always(d.services.Plugin())
	chain = append(chain, d.extra...)
	if err := checkPluginNames(d.enable, d.disable, implemented); err != nil {
		return nil, err
	}
	return chain, nil
}

// upstreamAdmissionPlugins are the names of kube-apiserver v1.37's
// admission plugins.
var upstreamAdmissionPlugins = []string{
	"AlwaysAdmit", "NamespaceAutoProvision", "NamespaceLifecycle", "NamespaceExists", "LimitPodHardAntiAffinityTopology",
	"LimitRanger", "ServiceAccount", "NodeRestriction", "TaintNodesByCondition", "AlwaysPullImages", "ImagePolicyWebhook",
	"PodSecurity", "PodNodeSelector", "Priority", "DefaultTolerationSeconds", "PodTolerationRestriction", "EventRateLimit",
	"ExtendedResourceToleration", "DefaultStorageClass", "StorageObjectInUseProtection", "PodGroupProtection",
	"OwnerReferencesPermissionEnforcement", "PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval",
	"CertificateSigning", "ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass",
	"DenyServiceExternalIPs", "PodTopologyLabels", "NodeDeclaredFeatureValidator", "PodResizeValidator",
	"MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook",
	"ResourceQuota", "AlwaysDeny",
}

// checkPluginNames refuses the names in enable and disable upstream does
// not know (with upstream's messages), a name in both, and the enabling
// of an upstream plugin plainkube does not have.
func checkPluginNames(enable, disable []string, implemented map[string]bool) error {
	var errs []error
	known := toSet(upstreamAdmissionPlugins)
	for _, name := range enable {
		switch {
		case !known[name]:
			errs = append(errs, fmt.Errorf("enable-admission-plugins plugin %q is unknown", name))
		case !implemented[name]:
			errs = append(errs, fmt.Errorf("enable-admission-plugins plugin %q is not implemented by plainkube", name))
		}
	}
	for _, name := range disable {
		if !known[name] {
			errs = append(errs, fmt.Errorf("disable-admission-plugins plugin %q is unknown", name))
		}
	}
	var both []string
	for _, name := range enable {
		if slices.Contains(disable, name) && !slices.Contains(both, name) {
			both = append(both, name)
		}
	}
	if len(both) > 0 {
		slices.Sort(both)
		errs = append(errs, fmt.Errorf("%v in enable-admission-plugins and disable-admission-plugins overlapped", both))
	}
	return errors.Join(errs...)
}

// configurablePlugins are the plugins whose configuration an admission
// configuration file may give.
var configurablePlugins = []string{eventratelimit.Name}

// readAdmissionConfig reads an admission configuration file (upstream's
// apiserver.config.k8s.io AdmissionConfiguration): each plugin's
// configuration, embedded or in the file its path names (relative to the
// file's folder). Configurations of plugins plainkube reads none of are
// refused rather than ignored.
func readAdmissionConfig(file string) (map[string][]byte, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("unable to read admission control configuration from %q [%v]", file, err)
	}
	var cfg apiserverv1.AdmissionConfiguration
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, fmt.Errorf("unable to read admission control configuration from %q [%v]", file, err)
	}
	switch cfg.APIVersion {
	case "apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1alpha1", "apiserver.k8s.io/v1alpha1":
	default:
		return nil, fmt.Errorf("admission control configuration %q: apiVersion %q is not apiserver.config.k8s.io/v1", file, cfg.APIVersion)
	}
	if cfg.Kind != "AdmissionConfiguration" {
		return nil, fmt.Errorf("admission control configuration %q: kind %q is not AdmissionConfiguration", file, cfg.Kind)
	}
	configs := map[string][]byte{}
	for _, p := range cfg.Plugins {
		if !slices.Contains(configurablePlugins, p.Name) {
			return nil, fmt.Errorf("admission control configuration %q: plainkube reads no configuration of admission plugin %q (it reads one of %v)", file, p.Name, configurablePlugins)
		}
		switch {
		case p.Configuration != nil:
			configs[p.Name] = p.Configuration.Raw
		case p.Path != "":
			path := p.Path
			if !filepath.IsAbs(path) {
				path = filepath.Join(filepath.Dir(file), path)
			}
			if configs[p.Name], err = os.ReadFile(path); err != nil {
				return nil, fmt.Errorf("unable to read admission control configuration of %s from %q [%v]", p.Name, path, err)
			}
		}
	}
	return configs, nil
}

func toSet(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// serverKinds is ownerreferences.Mapper over the API server (set once it
// exists).
type serverKinds struct{ api *apiserver.Server }

func (k *serverKinds) ResourcesForKind(gvk schema.GroupVersionKind) []ownerreferences.KindResource {
	if k.api == nil {
		return nil
	}
	var out []ownerreferences.KindResource
	for _, r := range k.api.ResourcesForKind(gvk) {
		out = append(out, ownerreferences.KindResource{Resource: r.Resource, Namespaced: r.Namespaced})
	}
	return out
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
