package node

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/auth/rbac/bootstrap"
)

func pod(ns, name, node string, spec corev1.PodSpec) *corev1.Pod {
	spec.NodeName = node
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func TestNodeAuthorizer(t *testing.T) {
	g := NewGraph()
	g.SetPod(pod("ns", "web", "n1", corev1.PodSpec{
		ServiceAccountName: "web-sa",
		ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull"}},
		Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}}}},
		}, EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}}}}}},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}}}}}},
		},
	}))
	g.SetPod(pod("ns", "pending", "", corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "unscheduled"}}}}}))
	g.SetPod(pod("ns", "other", "n2", corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "n2-only"}}}}}))
	g.SetVolume(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data"}, Spec: corev1.PersistentVolumeSpec{
		ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "data"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: "d", NodePublishSecretRef: &corev1.SecretReference{Namespace: "csi", Name: "csi-creds"}}}}})
	g.SetVolume(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-free"}})
	localPathVolume := func(name, node string, provisioner string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{localpath.NodeLabel: node},
			Annotations: map[string]string{localpath.ProvisionedByAnnotation: provisioner}}}
	}
	g.SetVolume(localPathVolume("pvc-mine", "n1", localpath.Provisioner))
	g.SetVolume(localPathVolume("pvc-theirs", "n2", localpath.Provisioner))
	g.SetVolume(localPathVolume("pvc-forged", "n1", "example.com/other")) // labelled, not the provisioner's

	g.SetPodCertificateRequest("ns", "mine", "n1")
	g.SetPodCertificateRequest("ns", "theirs", "n2")
	a := New(g, bootstrap.NodeRules())
	n1 := auth.NodeUser("n1")
	res := func(verb, group, resource, sub, ns, name string) auth.Attributes {
		return auth.Attributes{User: n1, Verb: verb, IsResource: true, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	list := func(resource, ns, selector string) auth.Attributes {
		at := res("list", "", resource, "", ns, "")
		at.FieldSelector = selector
		return at
	}
	pvList := func(verb, selector string) auth.Attributes {
		at := res(verb, "", "persistentvolumes", "", "", "")
		at.LabelSelector = selector
		return at
	}
	pcrList := func(selector string) auth.Attributes {
		at := res("list", "certificates.k8s.io", "podcertificaterequests", "", "", "")
		at.FieldSelector = selector
		return at
	}
	for _, tc := range []struct {
		at     auth.Attributes
		allow  bool
		reason string
	}{
		{res("get", "", "secrets", "", "ns", "pull"), true, ""},
		{res("get", "", "secrets", "", "ns", "env-secret"), true, ""},
		{res("watch", "", "secrets", "", "ns", "env-secret"), true, ""},
		{res("get", "", "secrets", "", "ns", "n2-only"), false, "no relationship found between node 'n1' and this object"},
		{res("get", "", "secrets", "", "ns", "unscheduled"), false, "no relationship found between node 'n1' and this object"},
		{res("list", "", "secrets", "", "ns", ""), false, "No Object name found"},
		{res("update", "", "secrets", "", "ns", "pull"), false, "can only read resources of this type"},
		{res("get", "", "secrets", "", "csi", "csi-creds"), true, ""},
		{res("get", "", "configmaps", "", "ns", "env-cm"), true, ""},
		{res("get", "", "configmaps", "", "ns", "kube-root-ca.crt"), true, ""},
		{res("get", "", "configmaps", "", "other", "kube-root-ca.crt"), false, "no relationship found between node 'n1' and this object"},
		{res("get", "", "persistentvolumeclaims", "", "ns", "data"), true, ""},
		{res("get", "", "persistentvolumeclaims", "", "ns", "web-scratch"), true, ""},
		{res("update", "", "persistentvolumeclaims", "status", "ns", "data"), true, ""},
		{res("update", "", "persistentvolumeclaims", "", "ns", "data"), false, "can only get individual resources of this type"},
		{res("get", "", "persistentvolumes", "", "", "pv-data"), true, ""},
		{res("get", "", "persistentvolumes", "", "", "pv-free"), false, "no relationship found between node 'n1' and this object"},
		// The local-path volumes whose folder is on the node.
		{pvList("list", localpath.NodeLabel+"=n1"), true, ""},
		{pvList("watch", localpath.NodeLabel+" in (n1)"), true, ""},
		{pvList("watch", localpath.NodeLabel+"=n2"), false, "can only list/watch persistentvolumes with the label selector plainkube.dev/local-path-node=n1"},
		{pvList("list", localpath.NodeLabel+" in (n1,n2)"), false, "can only list/watch persistentvolumes with the label selector plainkube.dev/local-path-node=n1"},
		{pvList("list", localpath.NodeLabel+"!=n1"), false, "can only list/watch persistentvolumes with the label selector plainkube.dev/local-path-node=n1"},
		{pvList("list", ""), false, "can only list/watch persistentvolumes with the label selector plainkube.dev/local-path-node=n1"},
		{res("update", "", "persistentvolumes", "", "", "pvc-mine"), true, ""},
		{res("patch", "", "persistentvolumes", "", "", "pvc-mine"), true, ""},
		{res("get", "", "persistentvolumes", "", "", "pvc-mine"), true, ""},
		{res("update", "", "persistentvolumes", "", "", "pvc-theirs"), false, "no relationship found between node 'n1' and this object"},
		{res("update", "", "persistentvolumes", "", "", "pvc-forged"), false, "no relationship found between node 'n1' and this object"},
		{res("update", "", "persistentvolumes", "status", "", "pvc-mine"), false, "can only get individual resources of this type"},
		{res("delete", "", "persistentvolumes", "", "", "pvc-mine"), false, "can only get individual resources of this type"},
		{res("update", "", "persistentvolumes", "", "", "pv-data"), false, "no relationship found between node 'n1' and this object"},
		{res("create", "", "serviceaccounts", "token", "ns", "web-sa"), true, ""},
		{res("create", "", "serviceaccounts", "token", "ns", "default"), false, "no relationship found between node 'n1' and this object"},
		{res("get", "", "serviceaccounts", "", "ns", "web-sa"), true, ""},
		{res("get", "", "pods", "", "ns", "web"), true, ""},
		{res("get", "", "pods", "", "ns", "other"), false, "no relationship found between node 'n1' and this object"},
		{list("pods", "", "spec.nodeName=n1"), true, ""},
		{list("pods", "", "spec.nodeName=n2"), false, "can only list/watch pods with spec.nodeName field selector"},
		{list("pods", "", ""), false, "can only list/watch pods with spec.nodeName field selector"},
		{res("create", "certificates.k8s.io", "podcertificaterequests", "", "ns", ""), true, ""},
		{res("update", "certificates.k8s.io", "podcertificaterequests", "status", "ns", "r"), false, "nodes may not access the status subresource of PodCertificateRequests"},
		{res("delete", "certificates.k8s.io", "podcertificaterequests", "", "ns", "r"), false, "nodes may not delete podcertificaterequests"},
		{res("get", "certificates.k8s.io", "podcertificaterequests", "", "ns", "mine"), true, ""},
		{res("get", "certificates.k8s.io", "podcertificaterequests", "", "ns", "theirs"), false, "no relationship found between node 'n1' and this object"},
		{pcrList("spec.nodeName=n1"), true, ""},
		{pcrList("spec.nodeName=n2"), false, "can only list/watch podcertificaterequests with nodeName field selector"},
		{res("update", "", "pods", "status", "ns", "web"), true, ""},
		{res("get", "", "nodes", "", "", "n1"), true, ""},
		{res("get", "", "nodes", "", "", "n2"), false, "node 'n1' cannot read 'n2', only its own Node object"},
		{list("nodes", "", ""), false, "node 'n1' cannot read all nodes, only its own Node object"},
		{res("update", "", "nodes", "status", "", "n1"), true, ""},
		// Writes of other Nodes are NodeRestriction's to refuse, as upstream.
		{res("patch", "", "nodes", "status", "", "n2"), true, ""},
		{res("update", "", "nodes", "", "", "n2"), true, ""},
		{res("delete", "", "nodes", "", "", "n1"), false, ""},
		{res("update", "coordination.k8s.io", "leases", "", "kube-node-lease", "n1"), true, ""},
		{res("update", "coordination.k8s.io", "leases", "", "kube-node-lease", "n2"), false, "can only access node lease with the same name as the requesting node"},
		{res("update", "coordination.k8s.io", "leases", "", "kube-system", "kube-controller-manager"), false, `can only access leases in the "kube-node-lease" system namespace`},
		{res("get", "", "services", "", "ns", ""), true, ""},
		{res("create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), true, ""},
		{res("delete", "apps", "deployments", "", "ns", "x"), false, ""},
	} {
		t.Run(fmt.Sprintf("%s %s/%s %s/%s %s %s", tc.at.Verb, tc.at.Resource, tc.at.Subresource, tc.at.Namespace, tc.at.Name, tc.at.FieldSelector, tc.at.LabelSelector), func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tc.at)
			if err != nil || (d == auth.Allow) != tc.allow || reason != tc.reason {
				t.Errorf("got %v %q %v, want allow=%v %q", d, reason, err, tc.allow, tc.reason)
			}
		})
	}

	// Not a node: no opinion, whatever it asks.
	if d, _, _ := a.Authorize(context.Background(), auth.Attributes{User: &auth.User{Name: "system:node:n1"}, Verb: "get", IsResource: true, Resource: "nodes", Name: "n1"}); d != auth.NoOpinion {
		t.Errorf("a user not in system:nodes got %v", d)
	}

	// The relation ends with the pod.
	g.DeletePod("ns", "web")
	if d, _, _ := a.Authorize(context.Background(), res("get", "", "secrets", "", "ns", "pull")); d == auth.Allow {
		t.Error("a node reads a secret of a pod that is gone")
	}
	if d, _, _ := a.Authorize(context.Background(), res("get", "", "secrets", "", "csi", "csi-creds")); d == auth.Allow {
		t.Error("a node reads a volume's secret when no pod of it uses the volume")
	}
	if len(g.uses) != 1 {
		t.Errorf("references left after the pod went: %v", g.uses)
	}
	// A pod moved to another node (a new pod under the same name)
	// relates that node only.
	g.SetPod(pod("ns", "other", "n1", corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "n2-only"}}}}}))
	if d, _, _ := a.Authorize(context.Background(), res("get", "", "secrets", "", "ns", "n2-only")); d != auth.Allow {
		t.Error("n1 cannot read the secret of its pod")
	}
	if d, _, _ := a.Authorize(context.Background(), auth.Attributes{User: auth.NodeUser("n2"), Verb: "get", IsResource: true, Resource: "secrets", Namespace: "ns", Name: "n2-only"}); d == auth.Allow {
		t.Error("n2 still reads the secret of a pod that moved away")
	}
}

// BenchmarkNodeAuthorizer: a decision with 10,000 pods on 1,000 nodes.
func BenchmarkNodeAuthorizer(b *testing.B) {
	g := NewGraph()
	for i := range 10000 {
		g.SetPod(pod(fmt.Sprintf("ns%d", i%100), fmt.Sprintf("p%d", i), fmt.Sprintf("n%d", i%1000), corev1.PodSpec{
			ServiceAccountName: "default",
			Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: fmt.Sprintf("s%d", i)}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}}}},
		}))
	}
	g.SetPodCertificateRequest("ns", "mine", "n1")
	g.SetPodCertificateRequest("ns", "theirs", "n2")
	a := New(g, bootstrap.NodeRules())
	at := auth.Attributes{User: auth.NodeUser("n7"), Verb: "get", IsResource: true, Resource: "secrets", Namespace: "ns7", Name: "s7"}
	other := auth.Attributes{User: auth.NodeUser("n7"), Verb: "create", IsResource: true, APIGroup: "", Resource: "events", Namespace: "ns7"}
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		x := at
		if i%2 == 1 {
			x = other
		}
		if d, _, _ := a.Authorize(ctx, x); d != auth.Allow {
			b.Fatal("denied")
		}
	}
}
