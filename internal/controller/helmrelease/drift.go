package helmrelease

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/resource"
)

// drift lists the objects of rel's manifest that are missing or differ
// from it: each object is applied (server-side, dry run, as the release's
// field manager, forced) and the outcome compared with the live object.
func (r *run) drift(rel *release.Release) ([]string, error) {
	objects, err := r.manifestObjects(rel)
	if err != nil {
		return nil, err
	}
	var drifted []string
	force := true
	for _, info := range objects {
		name := info.Mapping.GroupVersionKind.Kind + "/" + info.Name
		helper := resource.NewHelper(info.Client, info.Mapping)
		live, err := helper.Get(info.Namespace, info.Name)
		if apierrors.IsNotFound(err) {
			drifted = append(drifted, name+" (missing)")
			continue
		}
		if err != nil {
			return nil, err
		}
		body, err := json.Marshal(info.Object)
		if err != nil {
			return nil, err
		}
		applied, err := helper.WithFieldManager(FieldManager).DryRun(true).Patch(info.Namespace, info.Name, types.ApplyPatchType, body,
			&metav1.PatchOptions{Force: &force})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if !sameObject(live, applied) {
			drifted = append(drifted, name)
		}
	}
	return drifted, nil
}

// manifestObjects is rel's manifest as helm applied it: with the labels
// and annotations by which helm knows its objects (without them an apply
// by the release's field manager would take them off, and helm would no
// longer delete the objects at uninstall).
func (r *run) manifestObjects(rel *release.Release) (kube.ResourceList, error) {
	objects, err := r.cfg.KubeClient.Build(strings.NewReader(rel.Manifest), false)
	if err != nil {
		return nil, fmt.Errorf("reading the release's manifest: %w", err)
	}
	for _, info := range objects {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("%s/%s: not an unstructured object", info.Mapping.GroupVersionKind.Kind, info.Name)
		}
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["app.kubernetes.io/managed-by"] = "Helm"
		u.SetLabels(labels)
		annotations := u.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations["meta.helm.sh/release-name"] = rel.Name
		annotations["meta.helm.sh/release-namespace"] = rel.Namespace
		u.SetAnnotations(annotations)
	}
	return objects, nil
}

// sameObject compares two objects but for what every write changes.
func sameObject(a, b any) bool {
	ua, ok1 := a.(*unstructured.Unstructured)
	ub, ok2 := b.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return equality.Semantic.DeepEqual(a, b)
	}
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		c.SetManagedFields(nil)
		c.SetResourceVersion("")
		c.SetGeneration(0)
		return c.Object
	}
	return equality.Semantic.DeepEqual(strip(ua), strip(ub))
}

// correctDrift applies rel's manifest again (server-side, forced), making
// what is missing.
func (r *run) correctDrift(rel *release.Release) error {
	objects, err := r.manifestObjects(rel)
	if err != nil {
		return err
	}
	_, err = r.cfg.KubeClient.Update(objects, objects, kube.ClientUpdateOptionServerSideApply(true, true))
	return err
}

// replaceCRDs creates or replaces the chart's CRDs (crds/ of it and of its
// dependencies), for crds: CreateReplace.
func (r *run) replaceCRDs(want *desired) error {
	var manifest bytes.Buffer
	for _, crd := range want.chart.CRDObjects() {
		manifest.WriteString("\n---\n")
		manifest.Write(crd.File.Data)
	}
	if manifest.Len() == 0 {
		return nil
	}
	objects, err := r.cfg.KubeClient.Build(&manifest, false)
	if err != nil {
		return fmt.Errorf("the chart's CRDs: %w", err)
	}
	if _, err := r.cfg.KubeClient.Update(objects, objects, kube.ClientUpdateOptionServerSideApply(true, true)); err != nil {
		return fmt.Errorf("replacing the chart's CRDs: %w", err)
	}
	return nil
}

func equalJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
