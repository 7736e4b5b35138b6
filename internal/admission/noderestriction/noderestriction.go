package noderestriction

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry/core"
)

// Name is the plugin's name, as upstream's.
const Name = "NodeRestriction"

// The resources whose writes by nodes the plugin restricts.
var (
	pods            = schema.GroupResource{Resource: "pods"}
	nodes           = schema.GroupResource{Resource: "nodes"}
	claims          = schema.GroupResource{Resource: "persistentvolumeclaims"}
	volumes         = schema.GroupResource{Resource: "persistentvolumes"}
	serviceAccounts = schema.GroupResource{Resource: "serviceaccounts"}
	leases          = schema.GroupResource{Group: coordinationv1.GroupName, Resource: "leases"}
	csiNodes        = schema.GroupResource{Group: storagev1.GroupName, Resource: "csinodes"}
	resourceSlices  = schema.GroupResource{Group: resourcev1.GroupName, Resource: "resourceslices"}
	csrs            = schema.GroupResource{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests"}
	pcrs            = schema.GroupResource{Group: certificatesv1.GroupName, Resource: "podcertificaterequests"}
)

// The objects the plugin reads (the API server's storage).
var (
	podsV1       = corev1.SchemeGroupVersion.WithResource("pods")
	nodesV1      = corev1.SchemeGroupVersion.WithResource("nodes")
	claimsV1     = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	volumesV1    = corev1.SchemeGroupVersion.WithResource("persistentvolumes")
	csiDriversV1 = storagev1.SchemeGroupVersion.WithResource("csidrivers")
	accountsV1   = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
)

// Plugin is upstream's NodeRestriction: what a node identity
// (system:node:<name> in system:nodes) may write is limited to its own
// Node, Lease and CSINode, its own pods (mirror pods it creates, their
// status, evictions, deletes), tokens bound to its pods, the capacity and
// conditions in claims' status, ResourceSlices and certificate requests of
// its own, and PodCertificateRequests for its own pods (created only);
// not upstream's, the cleanup finalizer of the local-path volumes whose
// folder it holds (removed only).
// It also keeps every mirror pod clear of service accounts, secrets and
// token projections (upstream's ServiceAccount rule for mirror pods, run
// here whether or not the default plugins are on).
type Plugin struct {
	objects admission.Objects
	authz   auth.Authorizer
}

// New is the plugin over the API server's objects; authz decides the
// token audiences a node may ask for beyond those its pods mount.
func New(objects admission.Objects, authz auth.Authorizer) admission.Plugin {
	p := &Plugin{objects: objects, authz: authz}
	return admission.Plugin{
		Name:         Name,
		Resources:    []schema.GroupResource{pods, nodes, claims, volumes, serviceAccounts, leases, csiNodes, resourceSlices, csrs, pcrs},
		Operations:   []admission.Operation{admission.Create, admission.Update, admission.Delete},
		Subresources: []string{"*"},
		Mutate:       p.admit,
		Validate:     validateMirrorPod,
	}
}

// validateMirrorPod keeps any mirror pod, whoever creates it, clear of
// service accounts, secrets and token projections.
func validateMirrorPod(_ context.Context, a *admission.Attributes) error {
	if a.GroupResource() != pods || a.Subresource != "" || a.Operation != admission.Create {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	return core.AdmitMirrorPod(pod)
}

// admit is upstream's NodeRestriction, which is a mutating plugin there
// (so it runs before the object's validation, and on a TokenRequest
// before its audiences are defaulted).
func (p *Plugin) admit(ctx context.Context, a *admission.Attributes) error {
	if a.User == nil || !a.User.InGroup(auth.GroupNodes) {
		return nil
	}
	node, isNode := strings.CutPrefix(a.User.Name, auth.NodeUserPrefix)
	if !isNode {
		return nil
	}
	if node == "" {
		return forbiddenf(a, "could not determine node from user %q", a.User.Name)
	}
	switch a.GroupResource() {
	case pods:
		switch a.Subresource {
		case "":
			return p.admitPod(ctx, node, a)
		case "status":
			return admitPodStatus(node, a)
		case "eviction":
			return p.admitPodEviction(ctx, node, a)
		default:
			return forbiddenf(a, "unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource)
		}
	case nodes:
		return admitNode(node, a)
	case claims:
		if a.Subresource != "status" {
			return forbiddenf(a, "may only update PVC status")
		}
		return admitClaimStatus(node, a)
	case volumes:
		return admitVolume(node, a)
	case serviceAccounts:
		return p.admitServiceAccount(ctx, node, a)
	case leases:
		return admitLease(node, a)
	case csiNodes:
		return admitCSINode(node, a)
	case resourceSlices:
		return admitResourceSlice(node, a)
	case csrs:
		return admitCSR(node, a)
	case pcrs:
		return p.admitPodCertificateRequest(ctx, node, a)
	}
	return nil
}

func forbiddenf(a *admission.Attributes, format string, args ...any) error {
	return admission.Forbiddenf(a, format, args...)
}

func unexpectedType(a *admission.Attributes, obj any) error {
	return forbiddenf(a, "unexpected type %T", obj)
}

// getPod reads a pod; NotFound passes through, other errors refuse.
func (p *Plugin) getPod(ctx context.Context, a *admission.Attributes, name string) (*corev1.Pod, error) {
	obj, err := p.objects.Get(ctx, podsV1, a.Namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, err
	}
	if err != nil {
		return nil, admission.Forbidden(a, err)
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, unexpectedType(a, obj)
	}
	return pod, nil
}

// admitPod: a node creates mirror pods of its own and deletes its own
// pods, nothing else.
func (p *Plugin) admitPod(ctx context.Context, node string, a *admission.Attributes) error {
	switch a.Operation {
	case admission.Create:
		return p.admitMirrorPodCreate(ctx, node, a)
	case admission.Delete:
		pod, ok := a.OldObject.(*corev1.Pod)
		if !ok {
			var err error
			if pod, err = p.getPod(ctx, a, a.Name); err != nil {
				return err
			}
		}
		if pod.Spec.NodeName != node {
			return forbiddenf(a, "node %q can only delete pods with spec.nodeName set to itself", node)
		}
		return nil
	default:
		return forbiddenf(a, "unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, node)
	}
}

func (p *Plugin) admitMirrorPodCreate(ctx context.Context, node string, a *admission.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return unexpectedType(a, a.Object)
	}
	if err := core.AdmitNodePod(node, pod); err != nil {
		return err
	}
	owner := pod.OwnerReferences[0]
	obj, err := p.objects.Get(ctx, nodesV1, "", node)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return forbiddenf(a, "error looking up node %s to verify uid: %v", node, err)
	}
	if n, ok := obj.(*corev1.Node); !ok || owner.UID != n.UID {
		var uid any
		if ok {
			uid = n.UID
		}
		return forbiddenf(a, "node %s UID mismatch: expected %s got %v", node, owner.UID, uid)
	}
	references, what, err := apiObjectReference(pod)
	if err != nil {
		return forbiddenf(a, "error checking mirror pod for API references: %v", err)
	}
	if references {
		return forbiddenf(a, "node %q can not create pods that reference %s", node, what)
	}
	return nil
}

// apiObjectReference reports whether a pod refers to other API objects,
// and to what, in upstream's words: a mirror pod may not.
func apiObjectReference(pod *corev1.Pod) (bool, string, error) {
	spec := &pod.Spec
	if spec.ServiceAccountName != "" {
		return true, "serviceaccounts", nil
	}
	if core.ReferencesSecrets(spec) {
		return true, "secrets", nil
	}
	if referencesConfigMaps(spec) {
		return true, "configmaps", nil
	}
	if len(spec.ResourceClaims) > 0 {
		return true, "resourceclaims", nil
	}
	for _, v := range spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.AWSElasticBlockStore != nil, s.AzureDisk != nil, s.CephFS != nil, s.Cinder != nil,
			s.DownwardAPI != nil, s.EmptyDir != nil, s.FC != nil, s.FlexVolume != nil, s.Flocker != nil, s.GCEPersistentDisk != nil,
			s.GitRepo != nil, s.HostPath != nil, s.Image != nil, s.ISCSI != nil, s.NFS != nil, s.PhotonPersistentDisk != nil,
			s.PortworxVolume != nil, s.Quobyte != nil, s.RBD != nil, s.ScaleIO != nil, s.StorageOS != nil, s.VsphereVolume != nil:
			continue
		case s.ConfigMap != nil:
			return true, "configmaps (via configmap volumes)", nil
		case s.Secret != nil:
			return true, "secrets (via secret volumes)", nil
		case s.CSI != nil:
			return true, "csidrivers (via CSI volumes)", nil
		case s.Glusterfs != nil:
			return true, "endpoints (via glusterFS volumes)", nil
		case s.PersistentVolumeClaim != nil:
			return true, "persistentvolumeclaims", nil
		case s.Ephemeral != nil:
			return true, "persistentvolumeclaims (via ephemeral volumes)", nil
		case s.AzureFile != nil:
			return true, "secrets (via azureFile volumes)", nil
		case s.Projected != nil:
			for _, src := range s.Projected.Sources {
				switch {
				case src.ConfigMap != nil:
					return true, "configmaps (via projected volumes)", nil
				case src.Secret != nil:
					return true, "secrets (via projected volumes)", nil
				case src.ServiceAccountToken != nil:
					return true, "serviceaccounts (via projected volumes)", nil
				case src.ClusterTrustBundle != nil:
					return true, "clustertrustbundles", nil
				case src.PodCertificate != nil:
					return true, "podcertificates", nil
				case src.DownwardAPI != nil:
				default:
					return true, "", fmt.Errorf("unknown source for projected volume %q", v.Name)
				}
			}
		default:
			return true, "", fmt.Errorf("unknown volume type for volume  %q", v.Name)
		}
	}
	return false, "", nil
}

// referencesConfigMaps reports whether any container's environment or
// any volume names a ConfigMap.
func referencesConfigMaps(spec *corev1.PodSpec) bool {
	env := func(envFrom []corev1.EnvFromSource, env []corev1.EnvVar) bool {
		for _, e := range envFrom {
			if e.ConfigMapRef != nil {
				return true
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				return true
			}
		}
		return false
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		if env(c.EnvFrom, c.Env) {
			return true
		}
	}
	for _, c := range spec.EphemeralContainers {
		if env(c.EnvFrom, c.Env) {
			return true
		}
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			return true
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					return true
				}
			}
		}
	}
	return false
}

// admitPodStatus: a node updates the status of its own pods, not their
// labels nor the resource claims they were given.
func admitPodStatus(node string, a *admission.Attributes) error {
	if a.Operation != admission.Update {
		return forbiddenf(a, "unexpected operation %q", a.Operation)
	}
	old, ok := a.OldObject.(*corev1.Pod)
	if !ok {
		return unexpectedType(a, a.OldObject)
	}
	if old.Spec.NodeName != node {
		return forbiddenf(a, "node %q can only update pod status for pods with spec.nodeName set to itself", node)
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return unexpectedType(a, a.Object)
	}
	if !labelsEqual(old.Labels, pod.Labels) {
		return forbiddenf(a, "node %q cannot update labels through pod status", node)
	}
	if !claimStatusesEqual(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses) {
		return forbiddenf(a, "node %q cannot update resource claim statues", node)
	}
	if !equality.Semantic.DeepEqual(old.Status.ExtendedResourceClaimStatus, pod.Status.ExtendedResourceClaimStatus) {
		return forbiddenf(a, "node %q cannot update extended resource claim status", node)
	}
	if !equality.Semantic.DeepEqual(old.Status.NodeAllocatableResourceClaimStatuses, pod.Status.NodeAllocatableResourceClaimStatuses) {
		return forbiddenf(a, "node %q cannot update node allocatable resource claim statuses", node)
	}
	return nil
}

func labelsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			return false
		}
	}
	return true
}

func claimStatusesEqual(a, b []corev1.PodResourceClaimStatus) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.PodResourceClaimStatus) bool {
		if x.Name != y.Name || (x.ResourceClaimName == nil) != (y.ResourceClaimName == nil) {
			return false
		}
		return x.ResourceClaimName == nil || *x.ResourceClaimName == *y.ResourceClaimName
	})
}

// admitPodEviction: a node evicts its own pods only.
func (p *Plugin) admitPodEviction(ctx context.Context, node string, a *admission.Attributes) error {
	if a.Operation != admission.Create {
		return forbiddenf(a, "unexpected operation %s", a.Operation)
	}
	eviction, ok := a.Object.(*policyv1.Eviction)
	if !ok {
		return unexpectedType(a, a.Object)
	}
	name := a.Name
	if name == "" {
		if eviction.Name == "" {
			return forbiddenf(a, "could not determine pod from request data")
		}
		name = eviction.Name
	}
	pod, err := p.getPod(ctx, a, name)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != node {
		return forbiddenf(a, "node %s can only evict pods with spec.nodeName set to itself", node)
	}
	return nil
}

// admitClaimStatus: through a claim's status a node changes its capacity,
// conditions and allocated resources only.
func admitClaimStatus(node string, a *admission.Attributes) error {
	if a.Operation != admission.Update {
		return forbiddenf(a, "unexpected operation %q", a.Operation)
	}
	old, ok := a.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok {
		return unexpectedType(a, a.OldObject)
	}
	claim, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return unexpectedType(a, a.Object)
	}
	old, claim = old.DeepCopy(), claim.DeepCopy()
	for _, c := range []*corev1.PersistentVolumeClaim{old, claim} {
		c.ResourceVersion = ""
		c.ManagedFields = nil
		c.Status.Capacity = nil
		c.Status.Conditions = nil
		c.Status.AllocatedResourceStatuses = nil
		c.Status.AllocatedResources = nil
	}
	if !equality.Semantic.DeepEqual(old, claim) {
		return forbiddenf(a, "node %q is not allowed to update fields other than status.quantity and status.conditions: %s", node, claimDiff(old, claim))
	}
	return nil
}

// admitVolume: a node changes a PersistentVolume only to remove the
// local-path cleanup finalizer of a volume whose folder it holds (package
// localpath), once it has removed the folder.
func admitVolume(node string, a *admission.Attributes) error {
	if a.Operation != admission.Update || a.Subresource != "" {
		return forbiddenf(a, "node %q may only update persistentvolumes to remove the %s finalizer", node, localpath.CleanupFinalizer)
	}
	old, ok := a.OldObject.(*corev1.PersistentVolume)
	if !ok {
		return unexpectedType(a, a.OldObject)
	}
	pv, ok := a.Object.(*corev1.PersistentVolume)
	if !ok {
		return unexpectedType(a, a.Object)
	}
	if old.Labels[localpath.NodeLabel] != node || old.Annotations[localpath.ProvisionedByAnnotation] != localpath.Provisioner {
		return forbiddenf(a, "node %q may only update the local-path volumes of its own folder", node)
	}
	want := slices.DeleteFunc(slices.Clone(old.Finalizers), func(f string) bool { return f == localpath.CleanupFinalizer })
	old, pv = old.DeepCopy(), pv.DeepCopy()
	for _, v := range []*corev1.PersistentVolume{old, pv} {
		v.ResourceVersion = ""
		v.ManagedFields = nil
	}
	old.Finalizers = want
	if !equality.Semantic.DeepEqual(old, pv) { // (nil and empty lists are equal)
		return forbiddenf(a, "node %q may only remove the %s finalizer of a persistentvolume", node, localpath.CleanupFinalizer)
	}
	return nil
}

// claimDiff names the parts of a claim that differ.
func claimDiff(old, claim *corev1.PersistentVolumeClaim) string {
	var parts []string
	if !equality.Semantic.DeepEqual(old.ObjectMeta, claim.ObjectMeta) {
		parts = append(parts, "metadata")
	}
	if !equality.Semantic.DeepEqual(old.Spec, claim.Spec) {
		parts = append(parts, "spec")
	}
	if !equality.Semantic.DeepEqual(old.Status, claim.Status) {
		parts = append(parts, "status")
	}
	return "changed " + strings.Join(parts, ", ")
}

// admitNode: a node writes its own Node only; it may not give itself
// labels outside the kubelet's set (nor any node-restriction.kubernetes.io
// label), change its taints, owner references or config source.
func admitNode(node string, a *admission.Attributes) error {
	if a.Name != node {
		return forbiddenf(a, "node %q is not allowed to modify node %q", node, a.Name)
	}
	switch a.Operation {
	case admission.Create:
		n, ok := a.Object.(*corev1.Node)
		if !ok {
			return unexpectedType(a, a.Object)
		}
		if n.Spec.ConfigSource != nil {
			return forbiddenf(a, "node %q is not allowed to create pods with a non-nil configSource", node)
		}
		if bad := forbiddenLabels(n.Labels, nil); len(bad) > 0 {
			return forbiddenf(a, "node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", "))
		}
	case admission.Update:
		n, ok := a.Object.(*corev1.Node)
		if !ok {
			return unexpectedType(a, a.Object)
		}
		old, ok := a.OldObject.(*corev1.Node)
		if !ok {
			return unexpectedType(a, a.Object)
		}
		if n.Spec.ConfigSource != nil && !equality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return forbiddenf(a, "node %q is not allowed to update configSource to a new non-nil configSource", node)
		}
		if !equality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return forbiddenf(a, "node %q is not allowed to modify taints", node)
		}
		if !equality.Semantic.DeepEqual(n.OwnerReferences, old.OwnerReferences) {
			return forbiddenf(a, "node %q is not allowed to modify ownerReferences", node)
		}
		if bad := forbiddenLabels(n.Labels, old.Labels); len(bad) > 0 {
			return forbiddenf(a, "is not allowed to modify labels: %s", strings.Join(bad, ", "))
		}
	}
	return nil
}

// forbiddenLabels are the label keys that differ between now and old
// and that a node may not set, sorted.
func forbiddenLabels(now, old map[string]string) []string {
	var bad []string
	check := func(k string) {
		if !slices.Contains(bad, k) && !nodeMaySet(k) {
			bad = append(bad, k)
		}
	}
	for k, v := range now {
		if w, ok := old[k]; !ok || v != w {
			check(k)
		}
	}
	for k, v := range old {
		if w, ok := now[k]; !ok || v != w {
			check(k)
		}
	}
	sort.Strings(bad)
	return bad
}

// kubeletLabels are the kubernetes.io labels a kubelet may set on its own
// Node (upstream's k8s.io/kubelet well-known labels), besides those in the
// kubelet.kubernetes.io and node.kubernetes.io namespaces.
var kubeletLabels = []string{
	corev1.LabelHostname,
	corev1.LabelFailureDomainBetaZone,
	corev1.LabelFailureDomainBetaRegion,
	corev1.LabelInstanceType,
	corev1.LabelOSStable,
	corev1.LabelArchStable,
	"beta.kubernetes.io/os",
	"beta.kubernetes.io/arch",
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
	corev1.LabelInstanceTypeStable,
}

// nodeMaySet reports whether a node may set the label key on itself.
func nodeMaySet(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	in := func(domain string) bool { return ns == domain || strings.HasSuffix(ns, "."+domain) }
	if in(corev1.LabelNamespaceNodeRestriction) {
		return false
	}
	if !in("kubernetes.io") && !in("k8s.io") {
		return true
	}
	return slices.Contains(kubeletLabels, key) || in(corev1.LabelNamespaceSuffixKubelet) || in(corev1.LabelNamespaceSuffixNode)
}

// admitServiceAccount: a node asks for tokens bound to its own pods only,
// for audiences those pods use (or that it is authorized to ask for).
func (p *Plugin) admitServiceAccount(ctx context.Context, node string, a *admission.Attributes) error {
	if a.Operation != admission.Create || a.Subresource != "token" {
		return nil
	}
	tr, ok := a.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return unexpectedType(a, a.Object)
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return forbiddenf(a, "node requested token not bound to a pod")
	}
	if ref.UID == "" {
		return forbiddenf(a, "node requested token with a pod binding without a uid")
	}
	pod, err := p.getPod(ctx, a, ref.Name)
	if err != nil {
		return err
	}
	if ref.UID != pod.UID {
		return forbiddenf(a, "the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)
	}
	if pod.Spec.NodeName != node {
		return forbiddenf(a, "node requested token bound to a pod scheduled on a different node")
	}
	if err := p.checkAudience(ctx, tr, pod, a); err != nil {
		return admission.Forbidden(a, err)
	}
	return nil
}

// checkAudience: the one audience asked for (or none) must be one a
// projected token volume of the pod, or the CSI driver of one of its
// volumes, asks for; else the node must be authorized for it.
func (p *Plugin) checkAudience(ctx context.Context, tr *authenticationv1.TokenRequest, pod *corev1.Pod, a *admission.Attributes) error {
	var audience string
	switch len(tr.Spec.Audiences) {
	case 0:
	case 1:
		audience = tr.Spec.Audiences[0]
	default:
		return errors.New("node may only request 0 or 1 audiences")
	}
	found, err := p.podUsesAudience(ctx, pod, audience)
	if err != nil {
		return fmt.Errorf("error validating audience %q: %w", audience, err)
	}
	if found {
		return nil
	}
	decision, _, err := p.authz.Authorize(ctx, auth.Attributes{
		User: a.User, Verb: "request-serviceaccounts-token-audience", IsResource: true,
		APIGroup: a.Resource.Group, APIVersion: a.Resource.Version, Resource: audience,
		Namespace: a.Namespace, Name: a.Name,
	})
	if decision == auth.Allow {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error authorizing %s to request tokens for audience %q: %w", a.User.Name, audience, err)
	}
	return fmt.Errorf("%s is not authorized to request tokens for audience %q", a.User.Name, audience)
}

func (p *Plugin) podUsesAudience(ctx context.Context, pod *corev1.Pod, audience string) (bool, error) {
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil && src.ServiceAccountToken.Audience == audience {
					return true, nil
				}
			}
		}
		var driver string
		var err error
		switch {
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			driver, err = p.claimDriver(ctx, pod.Namespace, pod.Name+"-"+v.Name)
		case v.PersistentVolumeClaim != nil:
			driver, err = p.claimDriver(ctx, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		case v.CSI != nil:
			driver = v.CSI.Driver
		}
		if err == nil && driver != "" {
			var has bool
			if has, err = p.driverUsesAudience(ctx, driver, audience); has {
				return true, nil
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return false, errors.Join(errs...)
}

// claimDriver is the CSI driver of the volume a claim is bound to ("" if
// not a CSI volume).
func (p *Plugin) claimDriver(ctx context.Context, namespace, name string) (string, error) {
	obj, err := p.objects.Get(ctx, claimsV1, namespace, name)
	if err != nil {
		return "", err
	}
	claim, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return "", fmt.Errorf("unexpected type %T", obj)
	}
	obj, err = p.objects.Get(ctx, volumesV1, "", claim.Spec.VolumeName)
	if err != nil {
		return "", err
	}
	if pv, ok := obj.(*corev1.PersistentVolume); ok && pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver, nil
	}
	return "", nil
}

func (p *Plugin) driverUsesAudience(ctx context.Context, name, audience string) (bool, error) {
	obj, err := p.objects.Get(ctx, csiDriversV1, "", name)
	if err != nil {
		return false, err
	}
	driver, ok := obj.(*storagev1.CSIDriver)
	if !ok {
		return false, fmt.Errorf("unexpected type %T", obj)
	}
	for _, r := range driver.Spec.TokenRequests {
		if r.Audience == audience {
			return true, nil
		}
	}
	return false, nil
}

// admitLease: a node writes its own Lease in kube-node-lease only.
func admitLease(node string, a *admission.Attributes) error {
	if a.Namespace != corev1.NamespaceNodeLease {
		return forbiddenf(a, "can only access leases in the %q system namespace", corev1.NamespaceNodeLease)
	}
	if objectName(a) != node {
		return forbiddenf(a, "can only access node lease with the same name as the requesting node")
	}
	return nil
}

// objectName is the name of the object written: on a create, the
// object's own (the request may not name it).
func objectName(a *admission.Attributes) string {
	if a.Operation == admission.Create {
		if m, err := meta.Accessor(a.Object); err == nil {
			return m.GetName()
		}
		return ""
	}
	return a.Name
}

// admitCSINode: a node writes its own CSINode only, its spec not through
// its status.
func admitCSINode(node string, a *admission.Attributes) error {
	if objectName(a) != node {
		return forbiddenf(a, "can only access CSINode with the same name as the requesting node")
	}
	if a.Subresource != "status" {
		return nil
	}
	if a.Operation != admission.Update {
		return forbiddenf(a, "unexpected operation %q", a.Operation)
	}
	old, ok := a.OldObject.(*storagev1.CSINode)
	if !ok {
		return unexpectedType(a, a.OldObject)
	}
	n, ok := a.Object.(*storagev1.CSINode)
	if !ok {
		return unexpectedType(a, a.Object)
	}
	if !equality.Semantic.DeepEqual(old.Spec, n.Spec) {
		return forbiddenf(a, "node %q is not allowed to modify CSINode spec via status", node)
	}
	return nil
}

// admitResourceSlice: a node creates and deletes ResourceSlices of its
// own only.
func admitResourceSlice(node string, a *admission.Attributes) error {
	var obj any
	var verb string
	switch a.Operation {
	case admission.Create:
		obj, verb = a.Object, "create"
	case admission.Delete:
		obj, verb = a.OldObject, "delete"
	default:
		return nil
	}
	slice, ok := obj.(*resourcev1.ResourceSlice)
	if !ok {
		return unexpectedType(a, obj)
	}
	if slice.Spec.NodeName == nil || *slice.Spec.NodeName != node {
		return forbiddenf(a, "can only %s ResourceSlice with the same NodeName as the requesting node", verb)
	}
	return nil
}

// admitCSR: a node asks for kubelet certificates in its own name only.
func admitCSR(node string, a *admission.Attributes) error {
	if a.Operation != admission.Create {
		return nil
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return unexpectedType(a, a.Object)
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName && csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return forbiddenf(a, "unable to parse csr: PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return forbiddenf(a, "unable to parse csr: %v", err)
	}
	if req.Subject.CommonName != auth.NodeUserPrefix+node {
		return forbiddenf(a, "can only create a node CSR with CN=system:node:%s", node)
	}
	return nil
}

// retryable is how upstream answers a check that may fail only because
// its caches lag (a UID that does not match yet): a plain error, which
// its API server sends as a 500 of no reason.
func retryable(format string, args ...any) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason: metav1.StatusReasonUnknown, Message: fmt.Sprintf(format, args...)}}
}

// admitPodCertificateRequest: a node only creates requests, for a pod
// bound to it, naming that pod, its service account and the node itself
// with their UIDs, and for a signer the pod mounts a podCertificate
// volume of (or that the node is authorized to request for the account).
func (p *Plugin) admitPodCertificateRequest(ctx context.Context, node string, a *admission.Attributes) error {
	if a.Operation != admission.Create {
		return forbiddenf(a, "unexpected operation %v", a.Operation)
	}
	if a.Subresource != "" {
		return forbiddenf(a, "unexpected subresource %v", a.Subresource)
	}
	req, ok := a.Object.(*certificatesv1.PodCertificateRequest)
	if !ok {
		return unexpectedType(a, a.Object)
	}
	spec := &req.Spec
	if string(spec.NodeName) != node {
		return forbiddenf(a, "PodCertificateRequest.Spec.NodeName=%q, which is not the requesting node %q", spec.NodeName, node)
	}
	obj, err := p.objects.Get(ctx, nodesV1, "", node)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return retryable("while retrieving node %q named in the PodCertificateRequest: %v", node, err)
		}
		return forbiddenf(a, "while retrieving node %q named in the PodCertificateRequest: %v", node, err)
	}
	if n, ok := obj.(*corev1.Node); !ok || n.UID != spec.NodeUID {
		var uid any
		if ok {
			uid = n.UID
		}
		return retryable("PodCertificateRequest for pod %q names node UID %q, inconsistent with the running node (%q)", a.Namespace+"/"+spec.PodName, spec.NodeUID, uid)
	}
	podName := a.Namespace + "/" + spec.PodName
	pod, err := p.getPod(ctx, a, spec.PodName)
	if apierrors.IsNotFound(err) {
		return retryable("while retrieving pod %q named in the PodCertificateRequest: %v", podName, err)
	}
	if err != nil {
		return err
	}
	switch {
	case spec.PodUID != pod.UID:
		return retryable("PodCertificateRequest for pod %q contains pod UID (%q) which differs from running pod %q", podName, spec.PodUID, string(pod.UID))
	case pod.Spec.NodeName != node:
		return forbiddenf(a, "pod %q is not running on node %q named in the PodCertificateRequest", podName, spec.NodeName)
	case hasKey(pod.Annotations, corev1.MirrorPodAnnotationKey):
		return forbiddenf(a, "pod %q is a mirror pod", podName)
	case spec.ServiceAccountName != pod.Spec.ServiceAccountName:
		return forbiddenf(a, "PodCertificateRequest for pod %q contains serviceAccountName (%q) that differs from running pod (%q)", podName, spec.ServiceAccountName, pod.Spec.ServiceAccountName)
	}
	accountName := a.Namespace + "/" + spec.ServiceAccountName
	obj, err = p.objects.Get(ctx, accountsV1, a.Namespace, spec.ServiceAccountName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return retryable("while retrieving service account %q named in the PodCertificateRequest: %v", accountName, err)
		}
		return forbiddenf(a, "while retrieving service account %q named in the PodCertificateRequest: %v", accountName, err)
	}
	if sa, ok := obj.(*corev1.ServiceAccount); !ok || sa.UID != spec.ServiceAccountUID {
		var uid any
		if ok {
			uid = sa.UID
		}
		return retryable("PodCertificateRequest for pod %q names service account UID %q, which differs from the running service account (%q)", podName, spec.ServiceAccountUID, uid)
	}
	if podMountsCertificatesOf(pod, spec.SignerName) {
		return nil
	}
	// RBAC names cannot hold "/": the signer is named as in
	// ClusterTrustBundle names, with ":".
	decision, _, err := p.authz.Authorize(ctx, auth.Attributes{
		User: a.User, Verb: "request-serviceaccounts-podcertificate-signer", IsResource: true,
		APIGroup: a.Resource.Group, APIVersion: a.Resource.Version, Resource: strings.ReplaceAll(spec.SignerName, "/", ":"),
		Namespace: a.Namespace, Name: spec.ServiceAccountName,
	})
	switch {
	case decision == auth.Allow:
		return nil
	case err != nil:
		return forbiddenf(a, "error authorizing %s to request podcertificaterequests for signer %q: %v", a.User.Name, spec.SignerName, err)
	}
	return forbiddenf(a, "pod %q does not mount a podCertificate projected volume for signer %q", podName, spec.SignerName)
}

func hasKey(m map[string]string, key string) bool {
	_, ok := m[key]
	return ok
}

// podMountsCertificatesOf: a projected volume of pod has a podCertificate
// source of signer.
func podMountsCertificatesOf(pod *corev1.Pod, signer string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.PodCertificate != nil && src.PodCertificate.SignerName == signer {
				return true
			}
		}
	}
	return false
}
