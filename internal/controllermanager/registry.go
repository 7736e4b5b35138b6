package controllermanager

import (
	"fmt"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/auth/rbac/bootstrap"
	"plainkube.dev/plainkube/internal/controller/certificates/csrapproving"
	"plainkube.dev/plainkube/internal/controller/certificates/csrcleaner"
	"plainkube.dev/plainkube/internal/controller/certificates/csrsigning"
	"plainkube.dev/plainkube/internal/controller/clusterroleaggregation"
	"plainkube.dev/plainkube/internal/controller/cronjob"
	"plainkube.dev/plainkube/internal/controller/daemonset"
	"plainkube.dev/plainkube/internal/controller/deployment"
	"plainkube.dev/plainkube/internal/controller/disruption"
	"plainkube.dev/plainkube/internal/controller/endpoints"
	"plainkube.dev/plainkube/internal/controller/endpointslice"
	"plainkube.dev/plainkube/internal/controller/endpointslicemirroring"
	"plainkube.dev/plainkube/internal/controller/garbagecollector"
	"plainkube.dev/plainkube/internal/controller/helmrelease"
	"plainkube.dev/plainkube/internal/controller/job"
	"plainkube.dev/plainkube/internal/controller/localpath"
	"plainkube.dev/plainkube/internal/controller/namespace"
	"plainkube.dev/plainkube/internal/controller/nodeipam"
	"plainkube.dev/plainkube/internal/controller/nodelifecycle"
	"plainkube.dev/plainkube/internal/controller/persistentvolume"
	"plainkube.dev/plainkube/internal/controller/podautoscaler"
	"plainkube.dev/plainkube/internal/controller/podgc"
	"plainkube.dev/plainkube/internal/controller/pvcprotection"
	"plainkube.dev/plainkube/internal/controller/pvprotection"
	"plainkube.dev/plainkube/internal/controller/replicaset"
	"plainkube.dev/plainkube/internal/controller/resourcequota"
	"plainkube.dev/plainkube/internal/controller/rootcacert"
	"plainkube.dev/plainkube/internal/controller/serviceaccount"
	"plainkube.dev/plainkube/internal/controller/servicecidr"
	"plainkube.dev/plainkube/internal/controller/servicelb"
	"plainkube.dev/plainkube/internal/controller/statefulset"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Constructor builds one controller from the client config and the
// manager's options. A nil controller and nil error mean the options do
// not allow it to run (the CSR signer without a signing CA, say).
type Constructor func(cfg *rest.Config, o Options) (reconcile.Controller, error)

// Registration is one controller the manager can run.
type Registration struct {
	// Name is what --controllers calls it (the controller's package name).
	Name string
	// Upstream is kube-controller-manager's name for it, accepted too.
	Upstream string
	// ServiceAccount is the kube-system ServiceAccount the controller runs
	// as with Options.ServiceAccountConfig (upstream's
	// --use-service-account-credentials): upstream's name for that
	// controller's account, bound to its system:controller: role by the
	// default policy (plainkube's own controllers: a plainkube:controller:
	// role).
	ServiceAccount string
	New            Constructor
	// EnabledByDefault: run by "*".
	EnabledByDefault bool
}

// Registry lists every controller, in the order they are started.
var Registry = []Registration{
	{deployment.Name, "deployment-controller", "deployment-controller", sharing(deployment.New), true},
	{replicaset.Name, "replicaset-controller", "replicaset-controller", newReplicaSet, true},
	{daemonset.Name, "daemonset-controller", "daemon-set-controller", sharing(daemonset.New), true},
	{statefulset.Name, "statefulset-controller", "statefulset-controller", sharing(statefulset.New), true},
	{job.Name, "job-controller", "job-controller", sharing(job.New), true},
	{cronjob.Name, "cronjob-controller", "cronjob-controller", plain(cronjob.New), true},
	{garbagecollector.Name, "garbage-collector-controller", "generic-garbage-collector", plain(garbagecollector.New), true},
	{namespace.Name, "namespace-controller", "namespace-controller", sharing(namespace.New), true},
	{endpointslice.Name, "endpointslice-controller", "endpointslice-controller", sharing(endpointslice.New), true},
	{endpointslicemirroring.Name, "endpointslice-mirroring-controller", "endpointslicemirroring-controller", sharing(endpointslicemirroring.New), true},
	{endpoints.Name, "endpoints-controller", "endpoint-controller", sharing(endpoints.New), true},
	{serviceaccount.Name, "serviceaccount-controller", "service-account-controller", sharing(serviceaccount.New), true},
	{nodelifecycle.Name, "node-lifecycle-controller", "node-controller", newNodeLifecycle, true},
	{nodeipam.Name, "node-ipam-controller", "node-controller", newNodeIPAM, true},
	{servicelb.Name, "service-lb-controller", "service-lb-controller", sharing(servicelb.New), true},
	{podgc.Name, "pod-garbage-collector-controller", "pod-garbage-collector", sharing(podgc.New), true},
	{csrapproving.Name, "certificatesigningrequest-approving-controller", "certificate-controller", newCSRApproving, true},
	{csrcleaner.Name, "certificatesigningrequest-cleaner-controller", "certificate-controller", plain(csrcleaner.New), true},
	{csrsigning.Name, "certificatesigningrequest-signing-controller", "certificate-controller", newCSRSigning, true},
	{rootcacert.Name, "root-ca-certificate-publisher-controller", "root-ca-cert-publisher", newRootCACert, true},
	{clusterroleaggregation.Name, "clusterrole-aggregation-controller", "clusterrole-aggregation-controller", plain(clusterroleaggregation.New), true},
	{resourcequota.Name, "resourcequota-controller", "resourcequota-controller", sharing(resourcequota.New), true},
	{disruption.Name, "disruption-controller", "disruption-controller", sharing(disruption.New), true},
	{servicecidr.Name, "service-cidr-controller", "service-cidrs-controller", sharing(servicecidr.New), true},
	{persistentvolume.Name, "persistentvolume-binder-controller", "persistent-volume-binder", sharing(persistentvolume.New), true},
	{pvcprotection.Name, "persistentvolumeclaim-protection-controller", "pvc-protection-controller", sharing(pvcprotection.New), true},
	{pvprotection.Name, "persistentvolume-protection-controller", "pv-protection-controller", sharing(pvprotection.New), true},
	{localpath.Name, "local-path-provisioner-controller", bootstrap.LocalPathServiceAccount, sharing(localpath.New), true},
	{podautoscaler.Name, "horizontal-pod-autoscaler-controller", "horizontal-pod-autoscaler", newPodAutoscaler, true},
	{helmrelease.Name, "helm-controller", bootstrap.HelmControllerServiceAccount, newHelmRelease, true},
}

// ValidateControllers checks a --controllers list: each item is "*", a
// controller's name, or "-" and a name.
func ValidateControllers(list []string) error {
	for _, item := range list {
		if item == "*" {
			continue
		}
		name := strings.TrimPrefix(item, "-")
		if lookup(name) == nil {
			return fmt.Errorf("%q is not in the list of known controllers", name)
		}
	}
	return nil
}

// Enabled reports whether r runs under a --controllers list, read as
// upstream reads it: the first item naming r ("name" or "-name") decides;
// else "*" enables the controllers enabled by default; an empty list
// means "*".
func Enabled(list []string, r Registration) bool {
	if len(list) == 0 {
		list = []string{"*"}
	}
	star := false
	for _, item := range list {
		switch {
		case item == "*":
			star = true
		case item == r.Name || item == r.Upstream:
			return true
		case item == "-"+r.Name || item == "-"+r.Upstream:
			return false
		}
	}
	return star && r.EnabledByDefault
}

// RunsAll reports whether a --controllers list runs every one of the
// named controllers.
func RunsAll(list []string, names ...string) bool {
	for _, name := range names {
		r := lookup(name)
		if r == nil || !Enabled(list, *r) {
			return false
		}
	}
	return true
}

// AdmissionControllers are the controllers that finish the work of the
// server's default admission plugins (server.Options.DefaultAdmission):
// the default service accounts, node taints by condition, the volume
// protection finalizers and the default StorageClass's provisioner.
var AdmissionControllers = []string{serviceaccount.Name, nodelifecycle.Name, pvcprotection.Name, pvprotection.Name, localpath.Name}

func lookup(name string) *Registration {
	for i := range Registry {
		if Registry[i].Name == name || Registry[i].Upstream == name {
			return &Registry[i]
		}
	}
	return nil
}

// ---- constructors ----

// plain adapts a controller's New(cfg).
func plain[C reconcile.Controller](newC func(*rest.Config) (C, error)) Constructor {
	return func(cfg *rest.Config, _ Options) (reconcile.Controller, error) {
		c, err := newC(cfg)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// sharing adapts the New(cfg) of a controller that takes its informers
// from the process's shared ones.
func sharing[C interface {
	reconcile.Controller
	ShareInformers(*reconcile.SharedInformers)
}](newC func(*rest.Config) (C, error)) Constructor {
	return func(cfg *rest.Config, o Options) (reconcile.Controller, error) {
		c, err := newC(cfg)
		if err != nil {
			return nil, err
		}
		c.ShareInformers(o.Informers)
		return c, nil
	}
}

func newNodeLifecycle(cfg *rest.Config, o Options) (reconcile.Controller, error) {
	c, err := nodelifecycle.New(cfg)
	if err != nil {
		return nil, err
	}
	c.Informers = o.Informers
	if o.NodeMonitorGracePeriod > 0 {
		c.GracePeriod = o.NodeMonitorGracePeriod
		c.StartupGracePeriod = max(c.StartupGracePeriod, o.NodeMonitorGracePeriod)
	}
	return c, nil
}

func newPodAutoscaler(cfg *rest.Config, o Options) (reconcile.Controller, error) {
	c, err := podautoscaler.New(cfg)
	if err != nil {
		return nil, err
	}
	c.ShareInformers(o.Informers)
	if a := o.Autoscaling; a.SyncPeriod > 0 {
		c.SyncPeriod = a.SyncPeriod
	}
	if a := o.Autoscaling; a.Tolerance > 0 {
		c.Settings.Tolerance = a.Tolerance
	}
	if a := o.Autoscaling; a.DownscaleStabilization > 0 {
		c.Settings.DownscaleWindow = a.DownscaleStabilization
	}
	return c, nil
}

func newNodeIPAM(cfg *rest.Config, o Options) (reconcile.Controller, error) {
	c, err := nodeipam.New(cfg)
	if err != nil {
		return nil, err
	}
	if o.ClusterCIDR.IsValid() {
		c.ClusterCIDR = o.ClusterCIDR
	}
	c.Informers = o.Informers
	return c, nil
}

// newCSRSigning needs the signing CA.
func newCSRSigning(cfg *rest.Config, o Options) (reconcile.Controller, error) {
	if o.SigningCA == nil {
		return nil, nil
	}
	return csrsigning.New(cfg, *o.SigningCA, o.KubeletServingCA)
}

// newCSRApproving refuses serving certificates for the Service ranges.
func newCSRApproving(cfg *rest.Config, o Options) (reconcile.Controller, error) {
	c, err := csrapproving.New(cfg)
	if err != nil {
		return nil, err
	}
	c.Informers, c.ServiceCIDRs = o.Informers, o.ServiceCIDRs
	return c, nil
}

// newRootCACert needs the root CA to publish.
func newRootCACert(cfg *rest.Config, o Options) (reconcile.Controller, error) {
	if len(o.RootCA) == 0 {
		return nil, nil
	}
	c, err := rootcacert.New(cfg, o.RootCA)
	if err != nil {
		return nil, err
	}
	c.Informers = o.Informers
	return c, nil
}

// newReplicaSet runs the ReplicationController loop as upstream's
// replication-controller ServiceAccount, the ReplicaSet loop as
// replicaset-controller.
func newHelmRelease(cfg *rest.Config, o Options) (reconcile.Controller, error) {
	dir := o.HelmCacheDir
	if dir == "" {
		dir = helmrelease.DefaultCacheDir()
	}
	return helmrelease.New(cfg, dir)
}

func newReplicaSet(cfg *rest.Config, o Options) (reconcile.Controller, error) {
	c, err := replicaset.New(cfg)
	if err != nil {
		return nil, err
	}
	c.Informers = o.Informers
	if o.accountConfig != nil {
		rcCfg, err := o.accountConfig(replicationControllerAccount)
		if err != nil {
			return nil, err
		}
		if c.ReplicationControllerClient, err = kubernetes.NewForConfig(rcCfg); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// replicationControllerAccount is upstream's ServiceAccount of the
// ReplicationController loop.
const replicationControllerAccount = "replication-controller"

// ParseControllers reads a --controllers value (comma-separated) and
// validates it.
func ParseControllers(flag string) ([]string, error) {
	var list []string
	for _, item := range strings.Split(flag, ",") {
		if item = strings.TrimSpace(item); item != "" {
			list = append(list, item)
		}
	}
	if err := ValidateControllers(list); err != nil {
		return nil, fmt.Errorf("--controllers: %w", err)
	}
	return list, nil
}

// ControllersFlagUsage is the help text of --controllers.
func ControllersFlagUsage() string {
	var names []string
	for _, r := range Registry {
		names = append(names, r.Name)
	}
	return "a list of controllers to enable: '*' enables all on-by-default controllers, 'foo' enables the controller named 'foo', '-foo' disables it. " +
		"All controllers: " + strings.Join(names, ", ") + " (kube-controller-manager's names, such as deployment-controller, are accepted too)"
}
