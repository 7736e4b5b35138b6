package noderestriction

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/admissiontest"
	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/auth"
)

// audiences allows the audiences it lists to every node.
type audiences []string

func (a audiences) Authorize(_ context.Context, at auth.Attributes) (auth.Decision, string, error) {
	if at.Verb == "request-serviceaccounts-token-audience" {
		for _, aud := range a {
			if at.Resource == aud {
				return auth.Allow, "", nil
			}
		}
	}
	return auth.NoOpinion, "", nil
}

func nodeUser(name string) *auth.User {
	return &auth.User{Name: auth.NodeUserPrefix + name, Groups: []string{auth.GroupNodes, auth.GroupAuthenticated}}
}

func gvr(gr schema.GroupResource, version string) schema.GroupVersionResource {
	return gr.WithVersion(version)
}

func TestAdmit(t *testing.T) {
	ctx := context.Background()
	n1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1", Labels: map[string]string{
		corev1.LabelHostname: "n1", "node-restriction.kubernetes.io/pool": "a", "team": "x"}}}
	podOn := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "a"}},
			Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault"}}}}}}}}}
	}
	objects := admissiontest.Objects{
		nodesV1: {n1},
		podsV1:  {podOn("on-n1", "n1"), podOn("on-n2", "n2")},
	}
	p := New(objects, audiences{"allowed"})
	localPathVolume := func(node string, finalizers ...string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Finalizers: finalizers, ResourceVersion: "3",
			Labels: map[string]string{localpath.NodeLabel: node}, Annotations: map[string]string{localpath.ProvisionedByAnnotation: localpath.Provisioner}},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/d/pvc-1"}}}}
	}
	pathChanged := func(pv *corev1.PersistentVolume) *corev1.PersistentVolume {
		pv.Spec.HostPath.Path = "/etc"
		return pv
	}

	controller := true
	mirror := func(mut func(*corev1.Pod)) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "static-n1",
			Annotations:     map[string]string{"kubernetes.io/config.mirror": "hash"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "uid-n1", Controller: &controller}}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		if mut != nil {
			mut(pod)
		}
		return pod
	}
	withNode := func(mut func(*corev1.Node)) *corev1.Node {
		n := n1.DeepCopy()
		mut(n)
		return n
	}
	token := func(podName string, uid string, auds ...string) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: auds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: podName, UID: types.UID(uid)}}}
	}
	csr := func(cn, signer string) *certificatesv1.CertificateSigningRequest {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
		if err != nil {
			t.Fatal(err)
		}
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr"}, Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: signer, Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}}
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	claimResized := claim.DeepCopy()
	claimResized.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
	claimRelabelled := claim.DeepCopy()
	claimRelabelled.Labels = map[string]string{"x": "y"}
	sliceOn := func(node string) *resourcev1.ResourceSlice {
		return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourcev1.ResourceSliceSpec{NodeName: &node}}
	}
	relabelled := func(pod *corev1.Pod) *corev1.Pod {
		pod = pod.DeepCopy()
		pod.Labels["app"] = "b"
		return pod
	}

	podsR, nodesR := gvr(pods, "v1"), gvr(nodes, "v1")
	for _, tc := range []struct {
		name string
		a    *admission.Attributes
		// want is "" (admitted) or a part of the refusal's message.
		want string
		// notFound: refused with NotFound rather than Forbidden.
		notFound bool
	}{
		{name: "not a node", a: &admission.Attributes{Operation: admission.Update, Resource: nodesR, Name: "n2",
			Object: &corev1.Node{}, OldObject: &corev1.Node{}, User: &auth.User{Name: "bob"}}},
		{name: "node without a name", a: &admission.Attributes{Operation: admission.Update, Resource: nodesR, Name: "n1",
			User: &auth.User{Name: "system:node:", Groups: []string{auth.GroupNodes}}}, want: `could not determine node from user "system:node:"`},
		{name: "in system:nodes, not a node's name", a: &admission.Attributes{Operation: admission.Update, Resource: nodesR, Name: "n2",
			Object: &corev1.Node{}, OldObject: &corev1.Node{}, User: &auth.User{Name: "kubelet", Groups: []string{auth.GroupNodes}}}},

		// Pods.
		{name: "mirror pod", a: &admission.Attributes{Operation: admission.Create, Resource: podsR, Namespace: "ns", Name: "static-n1", Object: mirror(nil)}},
		{name: "not a mirror pod", a: &admission.Attributes{Operation: admission.Create, Resource: podsR, Namespace: "ns", Name: "x",
			Object: mirror(func(p *corev1.Pod) { p.Annotations = nil })},
			want: `pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods`},
		{name: "mirror pod of another node", a: &admission.Attributes{Operation: admission.Create, Resource: podsR, Namespace: "ns", Name: "x",
			Object: mirror(func(p *corev1.Pod) { p.Spec.NodeName = "n2" })}, want: `node "n1" can only create pods with spec.nodeName set to itself`},
		{name: "mirror pod owned by another uid", a: &admission.Attributes{Operation: admission.Create, Resource: podsR, Namespace: "ns", Name: "x",
			Object: mirror(func(p *corev1.Pod) { p.OwnerReferences[0].UID = "old" })}, want: "node n1 UID mismatch: expected old got uid-n1"},
		{name: "mirror pod using a ConfigMap", a: &admission.Attributes{Operation: admission.Create, Resource: podsR, Namespace: "ns", Name: "x",
			Object: mirror(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
			})}, want: `node "n1" can not create pods that reference configmaps`},
		{name: "mirror pod using a Secret", a: &admission.Attributes{Operation: admission.Create, Resource: podsR, Namespace: "ns", Name: "x",
			Object: mirror(func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "s"}} })},
			want: `node "n1" can not create pods that reference secrets`},
		{name: "anyone's mirror pod using a Secret", a: &admission.Attributes{Operation: admission.Create, Resource: podsR, Namespace: "ns", Name: "x",
			User:   &auth.User{Name: "admin", Groups: []string{"system:masters"}},
			Object: mirror(func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "s"}} })},
			want: "a mirror pod may not reference secrets"},
		{name: "update a pod", a: &admission.Attributes{Operation: admission.Update, Resource: podsR, Namespace: "ns", Name: "on-n1",
			Object: podOn("on-n1", "n1"), OldObject: podOn("on-n1", "n1")},
			want: `unexpected operation "UPDATE", node "n1" can only create and delete mirror pods`},
		{name: "delete own pod", a: &admission.Attributes{Operation: admission.Delete, Resource: podsR, Namespace: "ns", Name: "on-n1", OldObject: podOn("on-n1", "n1")}},
		{name: "delete another node's pod", a: &admission.Attributes{Operation: admission.Delete, Resource: podsR, Namespace: "ns", Name: "on-n2",
			OldObject: podOn("on-n2", "n2")}, want: `pods "on-n2" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself`},
		{name: "own pod's status", a: &admission.Attributes{Operation: admission.Update, Resource: podsR, Subresource: "status", Namespace: "ns", Name: "on-n1",
			Object: podOn("on-n1", "n1"), OldObject: podOn("on-n1", "n1")}},
		{name: "another node's pod's status", a: &admission.Attributes{Operation: admission.Update, Resource: podsR, Subresource: "status", Namespace: "ns", Name: "on-n2",
			Object: podOn("on-n2", "n2"), OldObject: podOn("on-n2", "n2")}, want: `node "n1" can only update pod status for pods with spec.nodeName set to itself`},
		{name: "labels through pod status", a: &admission.Attributes{Operation: admission.Update, Resource: podsR, Subresource: "status", Namespace: "ns", Name: "on-n1",
			Object: relabelled(podOn("on-n1", "n1")), OldObject: podOn("on-n1", "n1")}, want: `node "n1" cannot update labels through pod status`},
		{name: "evict own pod", a: &admission.Attributes{Operation: admission.Create, Resource: podsR, Subresource: "eviction", Namespace: "ns", Name: "on-n1",
			Object: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "on-n1"}}}},
		{name: "evict another node's pod", a: &admission.Attributes{Operation: admission.Create, Resource: podsR, Subresource: "eviction", Namespace: "ns", Name: "on-n2",
			Object: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "on-n2"}}}, want: "node n1 can only evict pods with spec.nodeName set to itself"},
		{name: "evict a pod that is gone", a: &admission.Attributes{Operation: admission.Create, Resource: podsR, Subresource: "eviction", Namespace: "ns", Name: "gone",
			Object: &policyv1.Eviction{}}, notFound: true},
		{name: "pod binding", a: &admission.Attributes{Operation: admission.Create, Resource: podsR, Subresource: "binding", Namespace: "ns", Name: "on-n1"},
			want: `unexpected pod subresource "binding", only 'status' and 'eviction' are allowed`},

		// Nodes.
		{name: "register", a: &admission.Attributes{Operation: admission.Create, Resource: nodesR, Name: "n1",
			Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelOSStable: "linux",
				"beta.kubernetes.io/arch": "amd64", "kubelet.kubernetes.io/x": "1", "example.node.kubernetes.io/y": "2", "team": "x"}}}}},
		{name: "register another node", a: &admission.Attributes{Operation: admission.Create, Resource: nodesR, Name: "n2",
			Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}}, want: `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},
		{name: "register with restricted labels", a: &admission.Attributes{Operation: admission.Create, Resource: nodesR, Name: "n1",
			Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"node-restriction.kubernetes.io/pool": "a",
				"node-role.kubernetes.io/control-plane": "", "team": "x"}}}},
			want: `node "n1" is not allowed to set the following labels: node-restriction.kubernetes.io/pool, node-role.kubernetes.io/control-plane`},
		{name: "register with a config source", a: &admission.Attributes{Operation: admission.Create, Resource: nodesR, Name: "n1",
			Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ConfigSource: &corev1.NodeConfigSource{}}}},
			want: `node "n1" is not allowed to create pods with a non-nil configSource`},
		{name: "update another node", a: &admission.Attributes{Operation: admission.Update, Resource: nodesR, Name: "n2",
			Object: &corev1.Node{}, OldObject: &corev1.Node{}}, want: `node "n1" is not allowed to modify node "n2"`},
		{name: "another node's status", a: &admission.Attributes{Operation: admission.Update, Resource: nodesR, Subresource: "status", Name: "n2",
			Object: &corev1.Node{}, OldObject: &corev1.Node{}}, want: `node "n1" is not allowed to modify node "n2"`},
		{name: "delete another node", a: &admission.Attributes{Operation: admission.Delete, Resource: nodesR, Name: "n2", OldObject: &corev1.Node{}},
			want: `node "n1" is not allowed to modify node "n2"`},
		{name: "own labels", a: &admission.Attributes{Operation: admission.Update, Resource: nodesR, Name: "n1", OldObject: n1,
			Object: withNode(func(n *corev1.Node) { n.Labels["team"] = "y"; n.Labels[corev1.LabelTopologyZone] = "z" })}},
		{name: "own status", a: &admission.Attributes{Operation: admission.Update, Resource: nodesR, Subresource: "status", Name: "n1", OldObject: n1,
			Object: withNode(func(n *corev1.Node) { n.Status.Phase = corev1.NodeRunning })}},
		{name: "remove a restricted label", a: &admission.Attributes{Operation: admission.Update, Resource: nodesR, Name: "n1", OldObject: n1,
			Object: withNode(func(n *corev1.Node) { delete(n.Labels, "node-restriction.kubernetes.io/pool") })},
			want: "is not allowed to modify labels: node-restriction.kubernetes.io/pool"},
		{name: "add a kubernetes.io label", a: &admission.Attributes{Operation: admission.Update, Resource: nodesR, Name: "n1", OldObject: n1,
			Object: withNode(func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/worker"] = "" })},
			want: "is not allowed to modify labels: node-role.kubernetes.io/worker"},
		{name: "taints", a: &admission.Attributes{Operation: admission.Update, Resource: nodesR, Name: "n1", OldObject: n1,
			Object: withNode(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} })},
			want: `node "n1" is not allowed to modify taints`},
		{name: "owner references", a: &admission.Attributes{Operation: admission.Update, Resource: nodesR, Name: "n1", OldObject: n1,
			Object: withNode(func(n *corev1.Node) { n.OwnerReferences = []metav1.OwnerReference{{Name: "x"}} })},
			want: `node "n1" is not allowed to modify ownerReferences`},

		// Tokens.
		{name: "token for own pod", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(serviceAccounts, "v1"), Subresource: "token",
			Namespace: "ns", Name: "sa", Object: token("on-n1", "uid-on-n1", "vault")}},
		{name: "token for an allowed audience", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(serviceAccounts, "v1"), Subresource: "token",
			Namespace: "ns", Name: "sa", Object: token("on-n1", "uid-on-n1", "allowed")}},
		{name: "token for another audience", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(serviceAccounts, "v1"), Subresource: "token",
			Namespace: "ns", Name: "sa", Object: token("on-n1", "uid-on-n1", "other")},
			want: `system:node:n1 is not authorized to request tokens for audience "other"`},
		{name: "token for two audiences", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(serviceAccounts, "v1"), Subresource: "token",
			Namespace: "ns", Name: "sa", Object: token("on-n1", "uid-on-n1", "vault", "allowed")}, want: "node may only request 0 or 1 audiences"},
		{name: "token for another node's pod", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(serviceAccounts, "v1"), Subresource: "token",
			Namespace: "ns", Name: "sa", Object: token("on-n2", "uid-on-n2", "vault")}, want: "node requested token bound to a pod scheduled on a different node"},
		{name: "token bound to a stale pod", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(serviceAccounts, "v1"), Subresource: "token",
			Namespace: "ns", Name: "sa", Object: token("on-n1", "old", "vault")},
			want: "the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated"},
		{name: "token without a pod uid", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(serviceAccounts, "v1"), Subresource: "token",
			Namespace: "ns", Name: "sa", Object: token("on-n1", "", "vault")}, want: "node requested token with a pod binding without a uid"},
		{name: "unbound token", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(serviceAccounts, "v1"), Subresource: "token",
			Namespace: "ns", Name: "sa", Object: &authenticationv1.TokenRequest{}}, want: "node requested token not bound to a pod"},

		// Leases, CSINodes, claims, slices, CSRs.
		{name: "own lease", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(leases, "v1"), Namespace: "kube-node-lease",
			Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}},
		{name: "another node's lease", a: &admission.Attributes{Operation: admission.Update, Resource: gvr(leases, "v1"), Namespace: "kube-node-lease", Name: "n2",
			Object: &coordinationv1.Lease{}, OldObject: &coordinationv1.Lease{}}, want: "can only access node lease with the same name as the requesting node"},
		{name: "a lease elsewhere", a: &admission.Attributes{Operation: admission.Update, Resource: gvr(leases, "v1"), Namespace: "kube-system", Name: "kube-controller-manager",
			Object: &coordinationv1.Lease{}, OldObject: &coordinationv1.Lease{}}, want: `can only access leases in the "kube-node-lease" system namespace`},
		{name: "own CSINode", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(csiNodes, "v1"),
			Object: &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}},
		{name: "another CSINode", a: &admission.Attributes{Operation: admission.Delete, Resource: gvr(csiNodes, "v1"), Name: "n2", OldObject: &storagev1.CSINode{}},
			want: "can only access CSINode with the same name as the requesting node"},
		{name: "claim capacity", a: &admission.Attributes{Operation: admission.Update, Resource: gvr(claims, "v1"), Subresource: "status", Namespace: "ns", Name: "data",
			Object: claimResized, OldObject: claim}},
		{name: "claim labels through status", a: &admission.Attributes{Operation: admission.Update, Resource: gvr(claims, "v1"), Subresource: "status", Namespace: "ns", Name: "data",
			Object: claimRelabelled, OldObject: claim}, want: `node "n1" is not allowed to update fields other than status.quantity and status.conditions`},
		{name: "claim itself", a: &admission.Attributes{Operation: admission.Update, Resource: gvr(claims, "v1"), Namespace: "ns", Name: "data",
			Object: claimResized, OldObject: claim}, want: "may only update PVC status"},
		{name: "remove the cleanup finalizer", a: &admission.Attributes{Operation: admission.Update, Resource: gvr(volumes, "v1"), Name: "pvc-1",
			Object: localPathVolume("n1", "kubernetes.io/pv-protection"), OldObject: localPathVolume("n1", "kubernetes.io/pv-protection", localpath.CleanupFinalizer)}},
		{name: "remove the last finalizer", a: &admission.Attributes{Operation: admission.Update, Resource: gvr(volumes, "v1"), Name: "pvc-1",
			Object: localPathVolume("n1"), OldObject: localPathVolume("n1", localpath.CleanupFinalizer)}},
		{name: "remove another finalizer", a: &admission.Attributes{Operation: admission.Update, Resource: gvr(volumes, "v1"), Name: "pvc-1",
			Object: localPathVolume("n1", localpath.CleanupFinalizer), OldObject: localPathVolume("n1", "kubernetes.io/pv-protection", localpath.CleanupFinalizer)},
			want: `node "n1" may only remove the plainkube.dev/local-path-cleanup finalizer of a persistentvolume`},
		{name: "change a volume's spec", a: &admission.Attributes{Operation: admission.Update, Resource: gvr(volumes, "v1"), Name: "pvc-1",
			Object: pathChanged(localPathVolume("n1")), OldObject: localPathVolume("n1", localpath.CleanupFinalizer)},
			want: `node "n1" may only remove the plainkube.dev/local-path-cleanup finalizer of a persistentvolume`},
		{name: "another node's volume", a: &admission.Attributes{Operation: admission.Update, Resource: gvr(volumes, "v1"), Name: "pvc-1",
			Object: localPathVolume("n2"), OldObject: localPathVolume("n2", localpath.CleanupFinalizer)},
			want: `node "n1" may only update the local-path volumes of its own folder`},
		{name: "delete a volume", a: &admission.Attributes{Operation: admission.Delete, Resource: gvr(volumes, "v1"), Name: "pvc-1", OldObject: localPathVolume("n1")},
			want: `node "n1" may only update persistentvolumes to remove the plainkube.dev/local-path-cleanup finalizer`},
		{name: "own slice", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(resourceSlices, "v1"), Object: sliceOn("n1")}},
		{name: "another node's slice", a: &admission.Attributes{Operation: admission.Delete, Resource: gvr(resourceSlices, "v1"), Name: "s", OldObject: sliceOn("n2")},
			want: "can only delete ResourceSlice with the same NodeName as the requesting node"},
		{name: "own serving CSR", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(csrs, "v1"),
			Object: csr("system:node:n1", certificatesv1.KubeletServingSignerName)}},
		{name: "serving CSR for another node", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(csrs, "v1"),
			Object: csr("system:node:n2", certificatesv1.KubeletServingSignerName)}, want: "can only create a node CSR with CN=system:node:n1"},
		{name: "CSR for another signer", a: &admission.Attributes{Operation: admission.Create, Resource: gvr(csrs, "v1"),
			Object: csr("anything", "example.com/signer")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.a
			if a.User == nil {
				a.User = nodeUser("n1")
			}
			if !p.Handles(a) {
				t.Fatal("the plugin does not handle the request")
			}
			chain := admission.Chain{p}
			err := chain.Mutate(ctx, a)
			if err == nil {
				err = chain.Validate(ctx, a)
			}
			switch {
			case tc.notFound:
				if !apierrors.IsNotFound(err) {
					t.Fatalf("err = %v, want NotFound", err)
				}
			case tc.want == "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("err = %v, want Forbidden with %q", err, tc.want)
			}
		})
	}
}
