package testenv_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/pkg/testenv"
)

var widgets = schema.GroupVersionResource{Group: "test.plainkube.dev", Version: "v1", Resource: "widgets"}

func widget(name string, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.plainkube.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"size": size},
	}}
}

func TestReadCRDs(t *testing.T) {
	crds, err := testenv.ReadCRDs(true, "testdata/crds")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	if len(names) != 2 || names[0] != "widgets.test.plainkube.dev" || names[1] != "gadgets.test.plainkube.dev" {
		t.Fatalf("read %v; want the widgets and gadgets CRDs (and the kustomization skipped)", names)
	}
	if _, err := testenv.ReadCRDs(true, "testdata/missing"); err == nil {
		t.Fatal("a missing path is no error with errorIfMissing")
	}
	if crds, err := testenv.ReadCRDs(false, "testdata/missing"); err != nil || len(crds) != 0 {
		t.Fatalf("a missing path without errorIfMissing: %v, %v", crds, err)
	}
}

// TestWithCRDs installs CRDs from a directory: the custom resources are
// served with their schema and status subresource as soon as Start
// returns, and the garbage collector, which knew the kinds from its first
// discovery, collects what a custom resource owns without waiting for its
// discovery resync.
func TestWithCRDs(t *testing.T) {
	env := testenv.Start(t, testenv.WithControllers(), testenv.WithCRDs("testdata/crds"))
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(env.Config)
	cs := kubernetes.NewForConfigOrDie(env.Config)

	if _, err := dyn.Resource(widgets).Namespace("default").Create(ctx, widget("bad", 0), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("spec.size 0 against minimum 1: got %v, want Invalid", err)
	}
	w, err := dyn.Resource(widgets).Namespace("default").Create(ctx, widget("w", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedField(w.Object, true, "status", "ok")
	if _, err := dyn.Resource(widgets).Namespace("default").UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("status subresource: %v", err)
	}
	gadgets := schema.GroupVersionResource{Group: "test.plainkube.dev", Version: "v1", Resource: "gadgets"}
	if _, err := dyn.Resource(gadgets).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("second CRD of the file: %v", err)
	}

	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "test.plainkube.dev/v1", Kind: "Widget", Name: "w", UID: w.GetUID(),
	}}}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, owned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(widgets).Namespace("default").Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "owned", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ConfigMap owned by a deleted Widget is still there after 10s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestWithCRDsMissingPathFails(t *testing.T) {
	// Start(t) would fail this test; the Environment returns the error.
	e := &testenv.Environment{CRDDirectoryPaths: []string{"testdata/missing"}, ErrorIfCRDPathMissing: true}
	if _, err := e.Start(); err == nil {
		e.Stop()
		t.Fatal("a missing CRD path with ErrorIfCRDPathMissing started")
	}
}

// TestEnvironment drives the envtest-shaped Environment: Start, use, Stop.
func TestEnvironment(t *testing.T) {
	e := &testenv.Environment{
		CRDDirectoryPaths: []string{"testdata/crds", "testdata/not-there"}, // missing paths are skipped, as in envtest
		Options:           []testenv.Option{testenv.WithControllers()},
	}
	cfg, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	if len(e.KubeConfig) == 0 || e.Env == nil || cfg != e.Config {
		t.Fatalf("Start left KubeConfig, Env or Config unset")
	}
	if _, err := dynamic.NewForConfigOrDie(cfg).Resource(widgets).Namespace("default").Create(context.Background(), widget("w", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err == nil {
		t.Fatal("the API still answers after Stop")
	}
}
