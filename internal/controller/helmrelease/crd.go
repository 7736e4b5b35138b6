package helmrelease

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

//go:embed crd.yaml
var crdYAML []byte

// CRD is the HelmRelease CustomResourceDefinition.
func CRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(crdYAML, crd); err != nil {
		return nil, fmt.Errorf("the HelmRelease CRD: %w", err)
	}
	return crd, nil
}

// ensureCRD creates the CRD or brings its spec up to date, and waits
// until it is served.
func ensureCRD(ctx context.Context, client apiextensionsclient.Interface) error {
	want, err := CRD()
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	have, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := crds.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the HelmRelease CRD: %w", err)
		}
	case err != nil:
		return err
	default:
		// Compare what the server defaulted with what it defaults ours to
		// by a dry run: only a real difference is written.
		dry := have.DeepCopy()
		dry.Spec = want.Spec
		dry, err = crds.Update(ctx, dry, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return fmt.Errorf("updating the HelmRelease CRD: %w", err)
		}
		if !equality.Semantic.DeepEqual(dry.Spec, have.Spec) {
			have.Spec = want.Spec
			if _, err := crds.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("updating the HelmRelease CRD: %w", err)
			}
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		return err == nil && apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established), nil
	})
}
