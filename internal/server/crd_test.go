package server

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	aeclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

var certsGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}

// loadCertificatesExample returns the CRD and Certificate of testdata/certificates-crd.yaml.
func loadCertificatesExample(t *testing.T) (*apiextensionsv1.CustomResourceDefinition, *unstructured.Unstructured) {
	t.Helper()
	data, err := os.ReadFile("testdata/certificates-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), crd); err != nil {
		t.Fatal(err)
	}
	cert := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(docs[1]), &cert.Object); err != nil {
		t.Fatal(err)
	}
	return crd, cert
}

func crdClient(t *testing.T, cfg *rest.Config) aeclientset.Interface {
	cs, err := aeclientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func dynamicClient(t *testing.T, cfg *rest.Config) dynamic.Interface {
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// createCRD creates crd and waits until it is established.
func createCRD(t *testing.T, cfg *rest.Config, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	ctx := context.Background()
	cs := crdClient(t, cfg)
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	var got *apiextensionsv1.CustomResourceDefinition
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD %s not established: %v; status %+v", crd.Name, err, got.Status)
	}
	return got
}

func TestCustomResourceLifecycle(t *testing.T) {
	_, cfg := startServer(t)
	ctx := context.Background()
	crd, cert := loadCertificatesExample(t)
	start := time.Now()
	got := createCRD(t, cfg, crd)
	t.Logf("established after %v", time.Since(start))

	// Status and metadata as upstream leaves them.
	cond := func(typ apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
		for i := range got.Status.Conditions {
			if got.Status.Conditions[i].Type == typ {
				return &got.Status.Conditions[i]
			}
		}
		return nil
	}
	if c := cond(apiextensionsv1.NamesAccepted); c == nil || c.Reason != "NoConflicts" || c.Status != apiextensionsv1.ConditionTrue {
		t.Errorf("NamesAccepted: %+v", c)
	}
	if c := cond(apiextensionsv1.Established); c.Reason != "InitialNamesAccepted" {
		t.Errorf("Established: %+v", c)
	}
	if got.Status.AcceptedNames.Plural != "certificates" || len(got.Status.AcceptedNames.ShortNames) != 2 {
		t.Errorf("acceptedNames %+v", got.Status.AcceptedNames)
	}
	if len(got.Status.StoredVersions) != 1 || got.Status.StoredVersions[0] != "v1" {
		t.Errorf("storedVersions %v", got.Status.StoredVersions)
	}
	if len(got.Finalizers) != 1 || got.Finalizers[0] != apiextensionsv1.CustomResourceCleanupFinalizer {
		t.Errorf("finalizers %v", got.Finalizers)
	}

	dyn := dynamicClient(t, cfg)
	certs := dyn.Resource(certsGVR).Namespace("default")
	created, err := certs.Create(ctx, cert, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create certificate: %v", err)
	}
	if created.GetGeneration() != 1 || created.GetUID() == "" || created.GetResourceVersion() == "" {
		t.Errorf("created metadata: %+v", created.Object["metadata"])
	}
	if len(created.GetManagedFields()) == 0 {
		t.Errorf("no managedFields")
	}
	list, err := certs.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.GetKind() != "CertificateList" {
		t.Fatalf("list: %v %+v", err, list)
	}

	// A missing required field is a 422 naming it.
	bad := cert.DeepCopy()
	bad.SetName("bad")
	unstructured.RemoveNestedField(bad.Object, "spec", "secretName")
	_, err = certs.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.secretName: Required value") {
		t.Errorf("missing secretName: %v", err)
	}

	// Strategic merge patch is refused as upstream does for custom resources.
	_, err = certs.Patch(ctx, "foo", types.StrategicMergePatchType, []byte(`{"spec":{"secretName":"x"}}`), metav1.PatchOptions{})
	if statusCode(err) != 415 || !strings.Contains(err.Error(), "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml") {
		t.Errorf("strategic merge patch: %v", err)
	}
	// Merge patch of spec bumps generation; a status patch does not.
	p, err := certs.Patch(ctx, "foo", types.MergePatchType, []byte(`{"spec":{"secretName":"bar-tls"},"status":{"conditions":[{"type":"Ready"}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.GetGeneration() != 2 {
		t.Errorf("generation after spec patch %d", p.GetGeneration())
	}
	if _, ok := p.Object["status"]; ok {
		t.Errorf("main resource wrote status: %v", p.Object["status"])
	}
	p, err = certs.Patch(ctx, "foo", types.MergePatchType, []byte(`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if p.GetGeneration() != 2 {
		t.Errorf("generation after status patch %d", p.GetGeneration())
	}
	if c, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions"); len(c) != 1 {
		t.Errorf("status %v", p.Object["status"])
	}
	// JSON patch.
	if _, err := certs.Patch(ctx, "foo", types.JSONPatchType, []byte(`[{"op":"add","path":"/spec/dnsNames/-","value":"b.example.com"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Server-side apply.
	applied, err := certs.Apply(ctx, "foo", &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": map[string]interface{}{"name": "foo"},
		"spec": map[string]interface{}{"secretName": "applied-tls", "issuerRef": map[string]interface{}{"name": "i"}},
	}}, metav1.ApplyOptions{FieldManager: "test", Force: true})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if s, _, _ := unstructured.NestedString(applied.Object, "spec", "secretName"); s != "applied-tls" {
		t.Errorf("applied secretName %q", s)
	}

	// Watch sees ADDED, MODIFIED, DELETED.
	w, err := certs.Watch(ctx, metav1.ListOptions{ResourceVersion: applied.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	second := cert.DeepCopy()
	second.SetName("second")
	if _, err := certs.Create(ctx, second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := certs.Patch(ctx, "second", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := certs.Delete(ctx, "second", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []watch.EventType
	timeout := time.After(5 * time.Second)
	for len(seen) < 3 {
		select {
		case ev := <-w.ResultChan():
			seen = append(seen, ev.Type)
		case <-timeout:
			t.Fatalf("watch saw only %v", seen)
		}
	}
	if seen[0] != watch.Added || seen[1] != watch.Modified || seen[2] != watch.Deleted {
		t.Errorf("watch events %v", seen)
	}

	// Deleting the CRD deletes its instances, then the routes answer 404.
	cs := crdClient(t, cfg)
	if err := cs.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("CRD not deleted: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := certs.List(ctx, metav1.ListOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("route still served after the CRD was deleted")
	}
	// Created again, it starts empty.
	crd.ResourceVersion = ""
	createCRD(t, cfg, crd)
	list, err = certs.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("after recreation: %v %d items", err, len(list.Items))
	}
}

func sleep() { time.Sleep(20 * time.Millisecond) }
